#include "task.hpp"

#include "digest.hpp"

#include <unistd.h>
#include <algorithm>

#include <cmath>
#include <cstdio>

#include "mantissa/error.hpp"
#include "mantissa/kernels/profiler.hpp"
#include "mantissa/machine_memory.hpp"

namespace mantissa::train {
namespace {

// The model config, once its size was checked against this machine's memory.
template <class C>
const C& fitting(const C& c, const char* kind) {
  check_model_fits(c.parameter_count(), std::string("trainer.init.model (") + kind + ")");
  return c;
}

// Builds a validation loader, saying which settings to change when the data is too small.
template <class F>
auto validation_loader(F&& make) {
  try {
    return make();
  } catch (const Error& e) {
    throw Error(std::string("validation data: ") + e.what() +
                " (give validation more data, or lower the val_dataloader's batch_size or "
                "context)");
  }
}

class TextTask final : public Task {
 public:
  TextTask(const config::TrainerConfig& c, const data::CorpusProvider& kjv_corpus)
      : gpt_(fitting(c.model.gpt, "gpt"), c.seed), train_cfg_(c.train_data) {
    const data::ByteText all = c.train_data.dataset == config::DatasetKind::kjv
                                   ? data::load_kjv(c.train_data.data_dir, kjv_corpus)
                                   : data::load_text_file(c.train_data.path);
    const int32_t top =
        all.tokens.empty() ? 0 : *std::max_element(all.tokens.begin(), all.tokens.end());
    if (top >= c.model.gpt.vocab_size) {
      throw Error("trainer.init.model.vocab_size: " + std::to_string(c.model.gpt.vocab_size) +
                  " is too small for this text: its highest byte is " + std::to_string(top) +
                  ", so at least " + std::to_string(top + 1) + " (256 takes any byte-level text)");
    }
    auto [train, val] = data::split_by_position(all, c.train_data.val_fraction);
    train_text_ = std::move(train);
    val_text_ = std::move(val);
    config::DataloaderConfig v = c.train_data;  // without a val_dataloader: the held-out tail
    v.split = config::Split::val;
    if (c.val_data) v = *c.val_data;
    const auto part = [this](config::Split split) -> const data::ByteText& {
      return split == config::Split::val ? val_text_ : train_text_;
    };
    eval_text_ = &part(v.split);
    train_ =
        std::make_unique<data::TextLoader>(part(c.train_data.split), c.train_data.context,
                                           c.train_data.batch_size, c.train_data.shuffle, c.seed);
    val_context_ = v.context;
    val_batch_ = v.batch_size;
  }
  nn::Module& module() override { return gpt_; }
  autograd::Variable next_train_loss() override {
    const data::TextBatch b = [this] {
      kernels::ProfileScope scope(kernels::OpClass::data);
      return train_->next();
    }();
    return gpt_.loss(b.inputs, b.targets, b.batch, b.context);
  }
  void prepare_evaluation() override {
    if (val_) return;
    val_ = validation_loader([&] {
      return std::make_unique<data::TextLoader>(*eval_text_, val_context_, val_batch_, false, 0);
    });
  }
  EvalResult evaluate(std::int64_t steps) override {
    prepare_evaluation();
    data::TextLoader& val = *val_;
    val.set_state({});  // from the start of the validation data
    steps = std::min(steps, val.batches_per_epoch());
    EvalResult r;
    r.text = true;
    double sum = 0;
    for (std::int64_t s = 0; s < steps; ++s) {
      const data::TextBatch b = val.next();
      sum += gpt_.loss(b.inputs, b.targets, b.batch, b.context).value().item();
    }
    r.steps = steps;
    r.loss = sum / static_cast<double>(steps);
    r.perplexity = std::exp(r.loss);  // every batch has the same token count
    return r;
  }
  std::int64_t items_per_batch() const override {
    return train_cfg_.batch_size * train_cfg_.context;
  }
  const char* unit() const override { return "tokens"; }
  data::LoaderState loader_state() const override { return train_->state(); }
  void set_loader_state(const data::LoaderState& s) override { train_->set_state(s); }
  tensor::RngState rng_state() const override { return gpt_.dropout_rng_state(); }
  void set_rng_state(const tensor::RngState& s) override { gpt_.dropout_rng().set_state(s); }
  void set_batch_part(const tensor::BatchPart& part) override {
    train_->set_part(part);
    gpt_.dropout_rng().set_block_part(part);
  }
  std::uint64_t data_digest() const override {
    detail::Digest d;
    for (const data::ByteText* t : {&train_text_, &val_text_})
      d.add(t->tokens.data(), t->tokens.size() * sizeof(std::int32_t));
    return d.value();
  }

 private:
  nn::Gpt gpt_;
  config::DataloaderConfig train_cfg_;
  data::ByteText train_text_, val_text_;
  const data::ByteText* eval_text_ = nullptr;  // the split validation reads
  std::unique_ptr<data::TextLoader> train_, val_;
  std::int64_t val_context_ = 0, val_batch_ = 0;
};

data::ImageSplit image_split(config::Split s) {
  return s == config::Split::test ? data::ImageSplit::test : data::ImageSplit::train;
}

// The images of `d` (read from the dataloader at `key`) give the model `pixels` inputs each:
// checked before the first step, naming both keys.
void check_image_size(const data::ImageDataset& d, std::int64_t pixels, const std::string& key,
                      const std::string& model_key) {
  const std::int64_t have = d.channels * d.height * d.width;
  if (have == pixels) return;
  throw Error(key + ": images of " + std::to_string(d.channels) + " x " + std::to_string(d.height) +
              " x " + std::to_string(d.width) + " = " + std::to_string(have) +
              " values do not suit " + model_key + " " + std::to_string(pixels));
}

// Every label of `d` (read from the dataloader at `key`) is a class of the model: checked
// before the first step, naming both keys.
void check_labels(const data::ImageDataset& d, std::int64_t classes, const std::string& key) {
  for (std::size_t i = 0; i < d.labels.size(); ++i) {
    if (d.labels[i] < 0 || d.labels[i] >= classes) {
      throw Error(key + ": label " + std::to_string(d.labels[i]) + " (image " + std::to_string(i) +
                  ") is not a class of trainer.init.model.num_classes " + std::to_string(classes) +
                  " (expected 0 to " + std::to_string(classes - 1) + ")");
    }
  }
}

class ImageTask final : public Task {
 public:
  explicit ImageTask(const config::TrainerConfig& c) : cfg_(c) {
    const std::string dir = c.train_data.path.empty() ? data::kFashionMnistDir : c.train_data.path;
    train_set_ = data::load_fashion_mnist(image_split(c.train_data.split), dir);
    const config::DataloaderConfig v = c.val_data.value_or(c.train_data);
    val_set_ = data::load_fashion_mnist(c.val_data ? image_split(v.split) : data::ImageSplit::test,
                                        v.path.empty() ? dir : v.path);
    const std::string train_key = "trainer.fit.train_dataloader (" + dir + ")";
    const std::string val_key =
        c.val_data ? "trainer.fit.val_dataloader (" + (v.path.empty() ? dir : v.path) + ")"
                   : train_key;
    const std::int64_t classes =
        c.model.kind == config::ModelKind::mlp ? c.model.mlp.num_classes : c.model.cnn.num_classes;
    check_labels(train_set_, classes, train_key);
    check_labels(val_set_, classes, val_key + " (validation)");
    if (c.model.kind == config::ModelKind::mlp) {
      const std::string input = "trainer.init.model.input_size";
      check_image_size(train_set_, c.model.mlp.input_size, train_key, input);
      check_image_size(val_set_, c.model.mlp.input_size, val_key + " (validation)", input);
      mlp_ = std::make_unique<nn::Mlp>(fitting(c.model.mlp, "mlp"), c.seed);
    } else {
      check_image_size(val_set_, train_set_.channels * train_set_.height * train_set_.width,
                       val_key + " (validation)", "the training images' size");
      nn::CnnConfig cnn = c.model.cnn;  // the images' shape is the dataset's
      cnn.channels = train_set_.channels;
      cnn.height = train_set_.height;
      cnn.width = train_set_.width;
      cnn_ = std::make_unique<nn::Cnn>(fitting(cnn, "cnn"), c.seed);
    }
    val_batch_ = v.batch_size;
    try {
      train_ = std::make_unique<data::ImageLoader>(train_set_, c.train_data.batch_size,
                                                   c.train_data.shuffle, c.seed, true);
    } catch (const Error& e) {
      throw Error("trainer.fit.train_dataloader." + std::string(e.what()));
    }
  }
  nn::Module& module() override { return mlp_ ? static_cast<nn::Module&>(*mlp_) : *cnn_; }
  autograd::Variable logits(const tensor::Tensor& x) {
    if (mlp_) return mlp_->logits(autograd::Variable(x));
    const data::ImageDataset& d = train_set_;
    return cnn_->logits(autograd::Variable(x.reshape({x.dim(0), d.channels, d.height, d.width})));
  }
  autograd::Variable next_train_loss() override {
    const data::ImageBatch b = [this] {
      kernels::ProfileScope scope(kernels::OpClass::data);
      return train_->next();
    }();
    return autograd::cross_entropy(logits(b.x), b.y);
  }
  void prepare_evaluation() override {
    if (val_) return;
    val_ = validation_loader([&] {
      // Validation keeps its last, partial batch, but a batch larger than all of the data is
      // a mistake (a train batch size in the wrong key), not a request.
      if (val_batch_ > val_set_.size()) {
        throw Error("trainer.fit.val_dataloader.batch_size: " + std::to_string(val_batch_) +
                    " is larger than the validation images (" + std::to_string(val_set_.size()) +
                    ")");
      }
      return std::make_unique<data::ImageLoader>(val_set_, val_batch_, false, 0, false);
    });
  }
  EvalResult evaluate(std::int64_t steps) override {
    prepare_evaluation();
    data::ImageLoader& val = *val_;
    val.set_state({});  // from the start of the validation data
    steps = std::min(steps, val.batches_per_epoch());
    EvalResult r;
    double sum = 0;
    std::int64_t correct = 0, seen = 0;
    for (std::int64_t s = 0; s < steps; ++s) {
      const data::ImageBatch b = val.next();
      const autograd::Variable l = logits(b.x);
      sum += autograd::cross_entropy(l, b.y).value().item();
      const std::vector<float> v = l.value().to_vector();
      const std::size_t classes = v.size() / b.y.size();
      for (std::size_t i = 0; i < b.y.size(); ++i) {
        const float* row = v.data() + i * classes;
        correct += (std::max_element(row, row + classes) - row) == b.y[i];
      }
      seen += static_cast<std::int64_t>(b.y.size());
    }
    r.steps = steps;
    r.loss = sum / static_cast<double>(steps);
    r.accuracy = static_cast<double>(correct) / static_cast<double>(seen);
    return r;
  }
  std::int64_t items_per_batch() const override { return cfg_.train_data.batch_size; }
  const char* unit() const override { return "samples"; }
  data::LoaderState loader_state() const override { return train_->state(); }
  void set_loader_state(const data::LoaderState& s) override { train_->set_state(s); }
  tensor::RngState rng_state() const override { return {}; }
  void set_rng_state(const tensor::RngState&) override {}
  void set_batch_part(const tensor::BatchPart& part) override { train_->set_part(part); }
  std::uint64_t data_digest() const override {
    detail::Digest d;
    for (const data::ImageDataset* s : {&train_set_, &val_set_}) {
      const tensor::Tensor x = s->images.contiguous();
      d.add(x.raw_data(), static_cast<std::size_t>(x.numel() * x.element_bytes()));
      d.add(s->labels.data(), s->labels.size() * sizeof(std::int32_t));
    }
    return d.value();
  }

 private:
  config::TrainerConfig cfg_;
  data::ImageDataset train_set_, val_set_;
  std::unique_ptr<data::ImageLoader> train_, val_;
  std::int64_t val_batch_ = 0;
  std::unique_ptr<nn::Mlp> mlp_;
  std::unique_ptr<nn::Cnn> cnn_;
};

}  // namespace

void check_model_fits(std::int64_t parameters, const std::string& what) {
  constexpr std::int64_t kBytesPerParameter = 8;  // float32 weight and gradient
  const auto memory = static_cast<double>(physical_memory_bytes());
  const double need = static_cast<double>(parameters) * kBytesPerParameter;
  if (memory > 0 && need > memory) {
    char text[160];
    std::snprintf(text, sizeof(text), "%.4g GiB, more than this machine's %.4g GiB of memory",
                  need / (1 << 30), memory / (1 << 30));
    throw Error(what + ": " + std::to_string(parameters) +
                " parameters: their float32 weights and gradients need " + text);
  }
}

std::unique_ptr<Task> make_task(const config::TrainerConfig& config,
                                const data::CorpusProvider& kjv_corpus) {
  if (config.model.kind == config::ModelKind::gpt)
    return std::make_unique<TextTask>(config, kjv_corpus);
  return std::make_unique<ImageTask>(config);
}

}  // namespace mantissa::train
