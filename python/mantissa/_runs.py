"""Training runs from Python: train in-process, read a run directory, draw the report."""

import json
import os

import numpy as np

from mantissa import _args, _core


def _override(key, value):
    # JSON is YAML: numbers, booleans, null, strings, lists and mappings keep their types;
    # numpy scalars and arrays as the Python values they hold.
    def plain(v):
        if isinstance(v, (np.generic, np.ndarray)):
            return v.tolist()
        raise TypeError(f"overrides: {key}: a value of type {type(v).__name__}, expected a "
                        "number, bool, None, string, list or dict")

    if not isinstance(key, str) or not key:
        raise TypeError(f"overrides: key {key!r}, expected a non-empty string")
    return f"{key}={json.dumps(value, default=plain)}"


def train(config_path, overrides=None, progress=None, messages=None, mode="train_and_eval",
          resume=None):
    """Runs the trainer on a YAML config (docs/config.md) in this process, as
    `mantissa train --config CONFIG_PATH --set KEY=VALUE ...` does.

    overrides: {"trainer.init.loop.max_steps": 10, ...} (the --set keys; values are written
    as YAML). progress: called with a dict per logged window (step, max_steps, loss,
    loss_scale, learning_rate, grad_norm, skipped_steps, items_per_second, unit,
    eta_seconds). messages: called with each line of news (setup, checkpoints, skipped
    steps). mode: train, eval, train_and_eval or eval_all. resume: "latest" or a checkpoint.
    Returns the run's summary as a dict (run_dir, global_step, skipped_steps, last_loss,
    eval, last_checkpoint, interrupted; evals and unusable: eval_all's checkpoints evaluated
    and those it could not evaluate, with the error). Ctrl-C checkpoints at the next step
    boundary, then raises KeyboardInterrupt."""
    if overrides is not None and not isinstance(overrides, dict):
        raise TypeError(f"overrides: {overrides!r}, expected a dict of key: value")
    items = [_override(k, v) for k, v in (overrides or {}).items()]
    summary = _core.train(os.fspath(config_path), items, _args.text("mode", mode),
                          None if resume is None else os.fspath(resume),
                          _args.callback("progress", progress),
                          _args.callback("messages", messages))
    if summary.pop("keyboard_interrupt"):
        raise KeyboardInterrupt(f"training stopped at step {summary['global_step']}: "
                                f"checkpoint {summary['last_checkpoint']} written")
    return summary


class RunLog:
    """A run directory's metrics.jsonl as mantissa reads it (report/metrics.hpp): `run` (the run
    record: format, model, settings, ...), `windows` (one record per logged window), `evals`,
    `skips` and `precision_stats` (one row per sampled step and rounding site: "which layer
    loses what"; these four are pandas DataFrames when pandas is installed and frames is not
    False), the `fallbacks` (a list of dicts: step, from, to, reason), the `outcome` (how the
    run ended: a dict of step, outcome, skipped_steps, last_skipped_step, signal, checkpoint,
    message and text; None when no end was recorded) and the `label` the report gives the
    run."""

    def __init__(self, log, frames):
        self.source = log["source"]
        self.run = log["run"]
        self.windows = _table(log["windows"], frames)
        self.evals = _table(log["evals"], frames)
        self.skips = _table(log["skips"], frames)
        self.precision_stats = _table(log["precision_stats"], frames)
        self.fallbacks = log["fallbacks"]
        self.outcome = log["outcome"]
        self.label = log["label"]

    def __repr__(self):
        return (f"RunLog({self.source!r}: {self.run['model']} in {self.run['format']}, "
                f"{len(self.windows)} windows, {len(self.evals)} evals, "
                f"{len(self.skips)} skipped steps)")


def _pandas():
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _table(records, frames):
    pandas = _pandas() if frames is not False else None
    if frames and pandas is None:
        raise ImportError("read_run(frames=True) needs pandas")
    return records if pandas is None else pandas.DataFrame.from_records(records)


def read_run(run_dir, frames=None):
    """The run record and the metrics records of RUN_DIR/metrics.jsonl (a RunLog). frames:
    None for DataFrames when pandas is installed, True to require them, False for lists of
    dicts. Raises mantissa.Error naming the file when it is missing or malformed."""
    if frames is not None:
        _args.boolean("frames", frames)
    return RunLog(_core.read_run_log(os.fspath(run_dir)), frames)


def report(run_dirs, out, title=None, subtitle="", throughput=None, group_seeds=False):
    """Writes the precision report (`mantissa report`) of one or more run directories to the
    HTML file `out`; returns out. throughput: the throughput.jsonl `mantissa compare` wrote
    (the only throughput the report compares); group_seeds: draw runs of one job that differ
    only in their seed as their mean and range (`mantissa report --group-seeds`)."""
    if isinstance(run_dirs, (str, bytes, os.PathLike)):
        run_dirs = [run_dirs]
    if not os.fspath(out):
        raise ValueError("out: an empty path")
    if title is not None:
        _args.text("title", title)
    if not isinstance(subtitle, str):
        raise TypeError(f"subtitle: {subtitle!r}, expected a string")
    _args.boolean("group_seeds", group_seeds)
    _core.write_report([os.fspath(d) for d in run_dirs], os.fspath(out), title, subtitle,
                       None if throughput is None else os.fspath(throughput), group_seeds)
    return out
