// SandboxManager, its images and base templates: the default guest image (built or found on
// libuv's thread pool, progress lines hopping back to the loop), the package image a create's
// Debian packages ask for, the VM spec of a template boot, and the base template for a shape.
// See sandbox_manager.h.
#include "server/core/sandbox_manager.h"

#include <algorithm>
#include <mutex>

#include <spdlog/spdlog.h>

#include "server/common/uv_handle.h"
#include "server/vm/host_tsc.h"
#include "server/vm/image/image_builder.h"
#include "server/vm/image/npm_image.h"
#include "server/vm/image/package_image.h"

namespace lockroom::core {

namespace {

// Builds (or finds) the guest image on libuv's thread pool; progress lines hop back to the loop.
struct ImageJob {
  uv_work_t work{};
  uv_async_t* async = nullptr;
  std::function<Result<vm::image::GuestImage>(const vm::image::Progress&)> build;  // runs on the worker
  std::optional<Result<vm::image::GuestImage>> result;
  std::mutex mutex;
  std::vector<std::string> lines;
  CreateProgress progress;
  std::function<void(Result<vm::image::GuestImage>)> done;

  void flush_lines() {
    std::vector<std::string> pending;
    {
      std::lock_guard lock(mutex);
      pending.swap(lines);
    }
    for (auto& line : pending) {
      spdlog::info("image: {}", line);
      if (progress) progress(line, 5);
    }
  }
};

void run_image_job(uv_loop_t* loop, ImageJob* job) {
  job->async = new_handle<uv_async_t>(job);
  uv_async_init(loop, job->async, [](uv_async_t* a) {
    if (auto* job = static_cast<ImageJob*>(a->data)) job->flush_lines();
  });
  job->work.data = job;
  uv_queue_work(
      loop, &job->work,
      [](uv_work_t* w) {
        auto* job = static_cast<ImageJob*>(w->data);
        job->result = job->build([job](const std::string& line) {
          {
            std::lock_guard lock(job->mutex);
            job->lines.push_back(line);
          }
          uv_async_send(job->async);
        });
      },
      [](uv_work_t* w, int) {
        std::unique_ptr<ImageJob> job(static_cast<ImageJob*>(w->data));
        job->flush_lines();
        close_handle(job->async);
        auto result = job->result ? std::move(*job->result)
                                  : Result<vm::image::GuestImage>(make_error(ErrorCode::kInternal, "the image build did not run"));
        job->done(std::move(result));
      });
}

}  // namespace

// --- image and templates --------------------------------------------------------------------

void SandboxManager::ensure_image(CreateProgress progress, std::function<void(Result<vm::image::GuestImage>)> done) {
  if (image_) return done(*image_);
  if (!image_waiters_.join(std::move(done))) return;
  auto* job = new ImageJob();
  vm::image::ImageBuildOptions options;
  options.cache = config_.paths.cache;
  options.agent = config_.agent;
  job->build = [options](const vm::image::Progress& p) { return vm::image::ensure_image(options, p); };
  job->progress = std::move(progress);
  auto alive = alive_;
  job->done = [this, alive](Result<vm::image::GuestImage> r) {
    if (!*alive) return;
    if (r) image_ = *r;
    image_waiters_.finish(r);
  };
  run_image_job(loop_, job);
}

vm::VmSpec SandboxManager::base_spec(const vm::image::GuestImage& image, const Resources& limits) const {
  vm::VmSpec spec;
  spec.state_root = config_.paths.state;
  spec.qemu.accel = config_.accel;
  spec.qemu.vcpus = limits.cpus;
  spec.qemu.memory_mib = limits.memory_mib;
  spec.qemu.kernel = image.kernel();
  spec.qemu.initrd = image.initrd();
  vm::KernelCmdlineOptions cmdline;
  if (config_.accel == vm::Accel::kTcg) cmdline.tsc_khz = vm::host_tsc_khz();
  spec.qemu.kernel_cmdline = vm::kernel_cmdline(cmdline);
  spec.boot_timeout = config_.boot_timeout;
  return spec;
}

// An image layered on what `parent` gives, once per `key` and process: the first asker builds it
// on the thread pool (with progress), later ones get the kept image, concurrent ones wait for it.
void SandboxManager::ensure_layer(const std::string& key, CreateProgress progress, ImageParent parent, ImageLayerBuild build,
                                  std::function<void(Result<vm::image::GuestImage>)> done) {
  if (auto it = package_images_.find(key); it != package_images_.end()) return done(it->second);
  if (!package_image_waiters_[key].join(std::move(done))) return;
  auto alive = alive_;
  parent([this, alive, key, progress, build = std::move(build)](Result<vm::image::GuestImage> base) {
    if (!*alive) return;
    if (!base) return package_image_waiters_[key].finish(base);
    auto* job = new ImageJob();
    job->build = [base = *base, build](const vm::image::Progress& p) { return build(base, p); };
    job->progress = progress;
    job->done = [this, alive, key](Result<vm::image::GuestImage> r) {
      if (!*alive) return;
      if (r) package_images_[key] = *r;
      package_image_waiters_[key].finish(r);
    };
    run_image_job(loop_, job);
  });
}

// The default image, or the package image on top of it for the kits' Debian packages
// (vm/image/package_image.h), built once per package set and process.
void SandboxManager::ensure_image(const std::vector<std::string>& packages, CreateProgress progress,
                                  std::function<void(Result<vm::image::GuestImage>)> done) {
  if (packages.empty()) return ensure_image(std::move(progress), std::move(done));
  std::string key;
  for (const auto& p : packages) key += p + " ";
  vm::image::PackageImageOptions options;
  options.cache = config_.paths.cache;
  options.packages = packages;
  options.max_bytes = vm::image::max_package_bytes_from_env();
  ensure_layer(
      key, progress, [this, progress](auto got) { ensure_image(progress, std::move(got)); },
      [options](const vm::image::GuestImage& base, const vm::image::Progress& p) { return vm::image::ensure_package_image(base, options, p); },
      std::move(done));
}

// The image for the packages with the kits' npm layer on it (vm/image/npm_image.h), built once
// per package and npm set and process; without npm specs, the package image itself.
void SandboxManager::ensure_image(const std::vector<std::string>& packages, const std::vector<std::string>& npm, CreateProgress progress,
                                  std::function<void(Result<vm::image::GuestImage>)> done) {
  if (npm.empty()) return ensure_image(packages, std::move(progress), std::move(done));
  std::string key;
  for (const auto& p : packages) key += p + " ";
  key += "|npm ";
  for (const auto& s : npm) key += s + " ";
  // The layer carries no node: without Debian's nodejs the packages' programs cannot run (a kit
  // may bring node another way, so this is a note, not an error).
  if (!package_images_.count(key) && std::find(packages.begin(), packages.end(), "nodejs") == packages.end() && progress)
    progress("note: the kits ask for npm packages but not for the Debian package nodejs; their programs need a node in the guest", 5);
  vm::image::NpmLayerOptions options;
  options.cache = config_.paths.cache;
  options.specs = npm;
  options.max_bytes = vm::image::max_npm_bytes_from_env();
  ensure_layer(
      key, progress, [this, packages, progress](auto got) { ensure_image(packages, progress, std::move(got)); },
      [options](const vm::image::GuestImage& parent, const vm::image::Progress& p) { return vm::image::ensure_npm_image(parent, options, p); },
      std::move(done));
}

void SandboxManager::ensure_template(const Resources& limits, const std::vector<std::string>& packages, const std::vector<std::string>& npm,
                                     CreateProgress progress, std::function<void(Result<BaseTemplate>)> done) {
  auto alive = alive_;
  ensure_image(packages, npm, progress, [this, alive, limits, progress, done](Result<vm::image::GuestImage> image) {
    if (!*alive) return;
    if (!image) return done(image.error());
    vm::VmSpec spec = base_spec(*image, limits);
    // The template is ready when its agent answers hello; the link is then closed so the
    // snapshot holds an agent waiting for a new host.
    auto socket_deadline = config_.boot_timeout;
    spec.readiness = [socket_deadline](vm::Vm& vm, std::function<void(Result<void>)> ready) {
      connect_booting_guest(vm, std::chrono::steady_clock::now() + socket_deadline,
                            [ready](Result<std::unique_ptr<GuestLink>> link) {
                              if (!link) return ready(link.error());
                              close_and_release(std::move(*link), [ready] { ready({}); });
                            });
    };
    templates_->base(spec, image->manifest.hash, [progress, done](Result<BaseTemplate> base) {
      if (base && base->booted && progress) progress("Booted a template guest (kept for later runs)", 50);
      done(std::move(base));
    });
  });
}

}  // namespace lockroom::core
