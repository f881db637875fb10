#include "mantissa/train/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <cmath>
#include <nlohmann/json.hpp>

#include "mantissa/error.hpp"
#include "mantissa/tensor/safetensors.hpp"
#include "mantissa/write_file.hpp"
#include "support/untrusted_json.hpp"

namespace mantissa::train {
namespace fs = std::filesystem;
namespace {

using json = nlohmann::json;

void write_all_synced(const std::string& path, const std::string& bytes) {
  FdGuard fd(open_for_writing(path, O_WRONLY | O_CREAT | O_TRUNC, "a checkpoint"));
  write_all(fd.get(), bytes, path);
  if (::fsync(fd.get()) != 0) throw Error(path + ": fsync failed (" + std::strerror(errno) + ")");
  close_checked(fd.release(), path);
}

void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// std::filesystem failures become mantissa::Error naming the path and the operation.
void check(const std::error_code& ec, const std::string& path, const char* what) {
  if (ec) throw Error(path + ": cannot " + what + " (" + ec.message() + ")");
}

constexpr std::string_view kPrefix = "ckpt-", kSuffix = ".safetensors";
constexpr std::size_t kStepDigits = 8;  // save_checkpoint's zero padding

// The step of a name save_checkpoint writes (ckpt-, the step in 8 or more digits, zero-padded
// to 8 and no further, .safetensors); nullopt for every other name, so a user's
// "ckpt-best.safetensors" or "ckpt-00000004-good.safetensors" is never taken for (or deleted
// as) one of the run's checkpoints.
std::optional<std::int64_t> checkpoint_step(const fs::path& p) {
  const std::string n = p.filename().string();
  if (n.size() < kPrefix.size() + kStepDigits + kSuffix.size() || !n.starts_with(kPrefix) ||
      !n.ends_with(kSuffix)) {
    return std::nullopt;
  }
  const std::string_view digits =
      std::string_view(n).substr(kPrefix.size(), n.size() - kPrefix.size() - kSuffix.size());
  if (digits.size() > kStepDigits && digits.front() == '0') return std::nullopt;
  std::int64_t step = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || end != digits.data() + digits.size() || step < 0) return std::nullopt;
  return step;
}

bool is_checkpoint(const fs::path& p) {
  return checkpoint_step(p).has_value();
}

constexpr const char* kChecksumKey = "crc32";

std::string hex32(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof(b), "%08x", v);
  return b;
}

// Every tensor's crc32 matches the one recorded when it was written, and every recorded
// one names a tensor of the file.
void verify_checksums(const Checkpoint& c, const std::string& path) {
  const auto it = c.metadata.find(kChecksumKey);
  if (it == c.metadata.end()) throw Error(path + ": checkpoint metadata lacks 'crc32'");
  const json sums = support::parse_untrusted_json(
      it->second, path + ": checkpoint metadata 'crc32'", /*allow_invalid=*/true);
  if (!sums.is_object()) {
    throw Error(path + ": checkpoint metadata 'crc32' is not a JSON object of tensor checksums");
  }
  for (const auto& [name, t] : c.tensors) {
    if (!sums.contains(name) || !sums[name].is_string()) {
      throw Error(path + ": tensor '" + name + "' has no crc32 in the metadata");
    }
    const std::string computed = hex32(tensor::stored_crc32(t));
    if (sums[name].get<std::string>() != computed) {
      throw Error(path + ": tensor '" + name + "' fails its crc32 check (recorded " +
                  sums[name].get<std::string>() + ", computed " + computed +
                  "): the file is corrupt");
    }
  }
  for (const auto& [name, v] : sums.items()) {
    if (c.tensors.count(name) == 0) {
      throw Error(path + ": the crc32 list names tensor '" + name + "', which the file lacks");
    }
  }
}

}  // namespace

bool all_finite(const std::map<std::string, tensor::Tensor>& tensors) {
  for (const auto& [name, t] : tensors) {
    const tensor::Tensor f = t.to(numerics::Format::float32);
    const float* v = f.f32();
    for (std::int64_t i = 0; i < f.numel(); ++i) {
      if (!std::isfinite(v[i])) return false;
    }
  }
  return true;
}

namespace {

// Weights and optimizer state are finite in any usable checkpoint.
void verify_finite(const Checkpoint& c, const std::string& path) {
  for (const auto& [name, t] : c.tensors) {
    const tensor::Tensor f = t.to(numerics::Format::float32);
    const float* v = f.f32();
    std::int64_t bad = 0, first = -1;
    for (std::int64_t i = 0; i < f.numel(); ++i) {
      if (!std::isfinite(v[i])) {
        if (first < 0) first = i;
        ++bad;
      }
    }
    if (bad > 0) {
      throw Error(path + ": tensor '" + name + "' holds " + std::to_string(bad) +
                  " non-finite values (inf or NaN; the first at index " + std::to_string(first) +
                  "): the checkpoint is unusable");
    }
  }
}

}  // namespace

std::map<std::string, tensor::Tensor> with_prefix(
    std::string_view prefix, const std::map<std::string, tensor::Tensor>& tensors) {
  std::map<std::string, tensor::Tensor> out;
  for (const auto& [name, t] : tensors) out[std::string(prefix) + name] = t;
  return out;
}

std::map<std::string, tensor::Tensor> under_prefix(
    std::string_view prefix, const std::map<std::string, tensor::Tensor>& tensors) {
  std::map<std::string, tensor::Tensor> out;
  for (const auto& [name, t] : tensors) {
    if (name.starts_with(prefix)) out[name.substr(prefix.size())] = t;
  }
  return out;
}

std::string save_checkpoint(const std::string& dir, std::int64_t step, const Checkpoint& ckpt) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  check(ec, dir, "create the checkpoint directory");
  char name[64];
  std::snprintf(name, sizeof(name), "ckpt-%08lld.safetensors", static_cast<long long>(step));
  const std::string path = (fs::path(dir) / name).string();
  const std::string tmp = path + ".tmp";
  std::map<std::string, std::string> metadata = ckpt.metadata;
  metadata["format"] = kCheckpointVersion;
  json sums = json::object();
  for (const auto& [tname, t] : ckpt.tensors) sums[tname] = hex32(tensor::stored_crc32(t));
  metadata[kChecksumKey] = sums.dump();
  const std::string bytes = tensor::encode_safetensors(ckpt.tensors, metadata);
  try {
    write_all_synced(tmp, bytes);
    fs::rename(tmp, path, ec);  // atomic: readers see the old file set or the new one
    check(ec, path, "rename the new checkpoint into place");
  } catch (...) {
    // A partial temporary (a full disk, a file-size limit) would hold the space the run's
    // end record and the user need: it goes; the checkpoints before it stay.
    ::unlink(tmp.c_str());
    throw;
  }
  sync_dir(dir);
  return path;
}

Checkpoint load_checkpoint(const std::string& path) {
  tensor::SafetensorsFile f = tensor::load_safetensors(path);
  auto it = f.metadata.find("format");
  const bool v1 = it != f.metadata.end() && it->second == kUnchecksummedVersion;
  if (it == f.metadata.end() || !(it->second == kCheckpointVersion || v1)) {
    throw Error(path + ": not a mantissa checkpoint (metadata 'format' is " +
                (it == f.metadata.end() ? std::string("missing") : "'" + it->second + "'") +
                ", expected '" + kCheckpointVersion + "')");
  }
  Checkpoint c{std::move(f.tensors), std::move(f.metadata), !v1};
  if (c.checksummed) verify_checksums(c, path);
  verify_finite(c, path);
  decode_checkpoint_meta(c.metadata, path);  // every field typed and in range
  return c;
}

std::optional<LoadedCheckpoint> load_latest_checkpoint(const std::string& dir) {
  const std::vector<std::string> all = list_checkpoints(dir);
  if (all.empty()) return std::nullopt;
  try {
    return LoadedCheckpoint{all.back(), load_checkpoint(all.back())};
  } catch (const Error& e) {
    std::string advice = " No older checkpoint in " + dir + " loads either.";
    for (std::size_t i = all.size() - 1; i-- > 0;) {
      try {
        load_checkpoint(all[i]);
      } catch (const Error&) {
        continue;
      }
      advice = " The newest checkpoint that loads is " + all[i] +
               ": move the newer ones away (or delete them) and --resume latest takes it.";
      break;
    }
    throw Error(std::string(e.what()) + "." + advice);
  }
}

config::TrainerConfig config_of_checkpoint(const CheckpointMeta& meta, const std::string& path) {
  const std::string source = path + " (its config)";
  try {
    return config::parse_config(meta.config, {}, source);
  } catch (const Error& e) {  // a key path alone would read as an error in the user's config
    const std::string what = e.what();
    throw Error(what.rfind(path, 0) == 0 ? what : source + ": " + what);
  }
}

std::optional<std::int64_t> step_in_checkpoint_name(const std::string& path) {
  return checkpoint_step(fs::path(path));
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<std::int64_t, std::string>> found;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::optional<std::int64_t> step = checkpoint_step(it->path());
    std::error_code entry_ec;  // a dangling link is no checkpoint, not a failure to list
    if (step && it->is_regular_file(entry_ec)) found.emplace_back(*step, it->path().string());
  }
  check(ec, dir, "list the checkpoints");
  // By step, not by name: past step 99,999,999 the names grow a digit.
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  out.reserve(found.size());
  for (auto& [step, path] : found) out.push_back(std::move(path));
  return out;
}

std::optional<std::string> latest_checkpoint(const std::string& dir) {
  auto all = list_checkpoints(dir);
  if (all.empty()) return std::nullopt;
  return all.back();
}

void apply_retention(const std::string& dir, std::int64_t keep, const std::string& protect) {
  auto all = list_checkpoints(dir);
  std::error_code same_ec;
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < all.size(); ++i) {
    if (!protect.empty() && fs::equivalent(all[i], protect, same_ec)) continue;
    std::error_code ec;
    fs::remove(all[i], ec);
    check(ec, all[i], "delete the old checkpoint");
  }
}

void check_checkpoint_names_are_files(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const bool tmp = p.extension() == ".tmp" && is_checkpoint(p.parent_path() / p.stem());
    if (!tmp && !is_checkpoint(p)) continue;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || S_ISREG(st.st_mode) || (!tmp && S_ISLNK(st.st_mode)))
      continue;
    throw Error(p.string() + ": is " + file_kind(st.st_mode) + " under a name the run " +
                (tmp ? "writes its checkpoints through" : "saves a checkpoint as") +
                "; mantissa writes checkpoints only as regular files of its own (remove it)");
  }
  check(ec, dir, "list the checkpoints");
}

int remove_unfinished_checkpoints(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  std::vector<fs::path> unfinished;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    // Only regular files the run itself could have left (not links, directories or other
    // names ending in .tmp).
    std::error_code entry_ec;
    if (p.extension() == ".tmp" && is_checkpoint(p.parent_path() / p.stem()) &&
        !it->is_symlink(entry_ec) && it->is_regular_file(entry_ec)) {
      unfinished.push_back(p);
    }
  }
  check(ec, dir, "list the checkpoints");
  for (const fs::path& p : unfinished) {
    fs::remove(p, ec);
    check(ec, p.string(), "delete the unfinished checkpoint");
  }
  return static_cast<int>(unfinished.size());
}

}  // namespace mantissa::train
