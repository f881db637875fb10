"""A training run of the tiny test config from Python, its metrics read back, the report."""

import os
import signal
import threading
from pathlib import Path

import pytest

import mantissa

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "apps" / "tiny-gpt.yaml"


def tiny_overrides(run_dir):
    return {"trainer.init.checkpoint.dir": str(run_dir),
            "trainer.fit.train_dataloader.path": str(ROOT / "README.md"),
            "trainer.init.logging.precision_stats_steps": 3}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("runs") / "tiny"
    windows, lines = [], []
    summary = mantissa.train(TINY, overrides=tiny_overrides(run_dir), progress=windows.append,
                             messages=lines.append)
    return run_dir, summary, windows, lines


def test_train_reports_progress(tiny_run):
    run_dir, summary, windows, lines = tiny_run
    assert summary["global_step"] == 6 and not summary["interrupted"]
    assert summary["run_dir"] == str(run_dir)
    assert [w["step"] for w in windows] == [2, 4, 6]
    assert all(w["max_steps"] == 6 and w["unit"] == "tokens" for w in windows)
    assert all(0 < w["loss"] < 10 for w in windows)
    assert windows[0]["loss_scale"] is not None  # cbfloat16 with dynamic loss scaling
    assert summary["eval"]["perplexity"] > 1
    assert any("checkpoint" in line for line in lines)


def test_read_run_gives_the_metrics(tiny_run):
    run_dir, summary, windows, _ = tiny_run
    log = mantissa.read_run(run_dir, frames=False)
    assert log.run["model"] == "gpt" and log.run["format"] == "cbfloat16"
    assert log.run["loss_scaling"] == "dynamic" and log.run["max_steps"] == 6
    assert log.run["seed"] == 2
    assert [w["step"] for w in log.windows] == [2, 4, 6]
    for record, seen in zip(log.windows, windows):
        assert record["loss"] == pytest.approx(seen["loss"], rel=1e-9)
        assert record["learning_rate"] == pytest.approx(seen["learning_rate"], rel=1e-9)
    assert log.evals[-1]["step"] == 6
    assert log.evals[-1]["perplexity"] == pytest.approx(summary["eval"]["perplexity"], rel=1e-9)
    assert log.skips == []
    # Issue 27: how the run ended, and what it trained in.
    assert log.fallbacks == [] and log.label == "cbfloat16"
    assert log.outcome["outcome"] == "completed" and log.outcome["step"] == 6
    assert log.outcome["last_skipped_step"] is None and log.outcome["signal"] == ""
    assert log.outcome["checkpoint"] == summary["last_checkpoint"]
    assert log.outcome["text"] == "completed 6 steps (0 skipped)"
    # Which layer loses what: steps 1, 3 and 6 sampled, one row per rounding site.
    rows = log.precision_stats
    assert sorted({r["step"] for r in rows}) == [1, 3, 6]
    qkv = [r for r in rows if r["layer"] == "blocks.0.attn.qkv" and r["role"] == "weight"]
    assert [r["step"] for r in qkv] == [1, 3, 6]
    assert all(r["format"] == "cbfloat16" and r["op"] == "linear" for r in qkv)
    assert all(r["elements"] == 3 * 32 * 32 for r in qkv)
    assert all(50 < r["snr_db"] < 80 and r["scale_min"] is None for r in qkv)  # 10 bits


def test_read_run_frames(tiny_run):
    run_dir = tiny_run[0]
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pandas"):
            mantissa.read_run(run_dir, frames=True)
        assert isinstance(mantissa.read_run(run_dir).windows, list)
        pytest.skip("pandas is not installed: DataFrames not checked")
    log = mantissa.read_run(run_dir)
    assert list(log.windows["step"]) == [2, 4, 6]


def test_report(tiny_run, tmp_path):
    out = tmp_path / "report" / "tiny.html"
    assert mantissa.report(tiny_run[0], out, title="tiny") == out
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "tiny" in page
    assert "No throughput comparison" in page
    # A throughput file that is not compare's interleaved measurement is refused, naming it.
    with pytest.raises(mantissa.Error, match="not an interleaved_throughput record"):
        mantissa.report(tiny_run[0], out, throughput=tiny_run[0] / "metrics.jsonl")
    lines = tmp_path / "throughput.jsonl"
    lines.write_text('{"interleaved_throughput": "cbfloat16", "unit": "tokens", '
                     '"items_per_s": 100.0, "slowest_items_per_s": 90.0, '
                     '"fastest_items_per_s": 110.0, "steps": 10}\n')
    page = mantissa.report(tiny_run[0], out, throughput=lines, group_seeds=True).read_text()
    assert 'id="chart-throughput"' in page and "100 tokens/s (interleaved)" in page


def test_errors(tmp_path):
    with pytest.raises(mantissa.Error, match="metrics.jsonl"):
        mantissa.read_run(tmp_path / "nothing")
    with pytest.raises(mantissa.Error, match="no_such_key"):
        mantissa.train(TINY, overrides={"trainer.init.loop.no_such_key": 1})
    # Arguments of the wrong kind are refused before anything runs, naming the argument.
    run_dir = tmp_path / "never"
    for kwargs, error, words in [
            ({"progress": 5}, TypeError, "progress: 5 is not callable"),
            ({"messages": "x"}, TypeError, "messages: 'x' is not callable"),
            ({"mode": None}, TypeError, "mode: None, expected a string"),
            ({"overrides": [("a", 1)]}, TypeError, "overrides: .* expected a dict")]:
        with pytest.raises(error, match=words):
            mantissa.train(TINY, **{"overrides": tiny_overrides(run_dir), **kwargs})
        assert not run_dir.exists()
    with pytest.raises(TypeError, match="overrides: trainer.init.seed: a value of type object"):
        mantissa.train(TINY, overrides={"trainer.init.seed": object()})
    with pytest.raises(TypeError, match="frames: 'no', expected True or False"):
        mantissa.read_run(tmp_path, frames="no")
    with pytest.raises(ValueError, match="out: an empty path"):
        mantissa.report([tmp_path], "")


def test_numpy_values_in_overrides_are_their_numbers(tmp_path):
    import numpy as np

    overrides = dict(tiny_overrides(tmp_path / "run"))
    overrides["trainer.init.loop.max_steps"] = np.int64(2)
    assert mantissa.train(TINY, overrides=overrides, mode="train")["global_step"] == 2


def test_eval_all_of_one_checkpoint_is_refused(tiny_run):
    run_dir, summary = tiny_run[0], tiny_run[1]
    with pytest.raises(mantissa.Error, match="names one checkpoint, but the eval_all mode"):
        mantissa.train(TINY, overrides=tiny_overrides(run_dir), mode="eval_all",
                       resume=summary["last_checkpoint"])


def test_eval_all_goes_past_an_unusable_checkpoint(tiny_run, tmp_path):
    # A copy of the tiny run (checkpoints at steps 3 and 6) with step 3's truncated: step 6
    # is evaluated and listed, step 3 is listed as unusable with its error.
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(tiny_run[0], run_dir)
    (run_dir / ".lock").unlink(missing_ok=True)
    three = run_dir / "ckpt-00000003.safetensors"
    os.truncate(three, 100)
    summary = mantissa.train(TINY, overrides=tiny_overrides(run_dir), mode="eval_all")
    assert [e["step"] for e in summary["evals"]] == [6]
    assert summary["evals"][0]["eval"]["loss"] == summary["eval"]["loss"]
    assert [u["checkpoint"] for u in summary["unusable"]] == [str(three)]
    assert "truncated" in summary["unusable"][0]["error"]


def test_callback_exception_ends_the_run(tmp_path):
    def fail(_):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        mantissa.train(TINY, overrides=tiny_overrides(tmp_path / "run"), progress=fail)


def test_ctrl_c_checkpoints_then_raises(tmp_path):
    # No callbacks: a SIGINT can only be seen by the trainer's events (never inside Python
    # code of ours), so the run must take the stop path: checkpoint, then KeyboardInterrupt.
    run_dir = tmp_path / "run"
    overrides = dict(tiny_overrides(run_dir))
    overrides.update({"trainer.init.loop.max_steps": 1_000_000,
                      "trainer.init.logging.log_steps": 1,
                      "trainer.init.checkpoint.steps": 0})
    sender = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    sender.start()
    try:
        with pytest.raises(KeyboardInterrupt, match="checkpoint .* written"):
            mantissa.train(TINY, overrides=overrides)
    finally:
        sender.join()
    log = mantissa.read_run(run_dir, frames=False)
    assert 0 < len(log.windows) and log.windows[-1]["step"] < 1_000_000
    assert log.outcome["outcome"] == "interrupted" and log.outcome["signal"] == "SIGINT"
    assert any(p.suffix == ".safetensors" for p in run_dir.iterdir())
