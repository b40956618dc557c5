#include "sweep/runner.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>

#include "engine/simulation.h"
#include "report/table.h"

namespace simloop::sweep {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string hms(double s) {
  const auto t = static_cast<long>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

// Identifying columns first, then the swept keys, the metrics of a run and
// how the run ended.
std::vector<std::string> header_of(const Plan& p) {
  std::vector<std::string> h = {"point", "repeat", "point_hash"};
  for (const auto& k : p.spec.keys) h.push_back(k);
  const report::Row metrics = engine::result_row(p.base, engine::SimResult{});
  for (const auto& [k, v] : metrics.cells())
    if (std::find(h.begin(), h.end(), k) == h.end()) h.push_back(k);
  for (const char* k : {"status", "error", "process_s"}) h.push_back(k);
  return h;
}

json read_json(const fs::path& p) {
  std::ifstream f(p);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot read", p.string()));
  try {
    return json::parse(f);
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{}: not a manifest: {}", p.string(), e.what()));
  }
}

volatile std::sig_atomic_t g_interrupts = 0;
volatile std::sig_atomic_t g_terminate = 0;

extern "C" void on_signal(int sig) {
  if (sig == SIGTERM) g_terminate = 1;
  g_interrupts = g_interrupts + 1;
}

struct Job {
  pid_t pid;
  size_t point;
  int repeat;
  uint64_t seed;
  std::string out;
  Clock::time_point start;
};

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t w = ::write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    off += static_cast<size_t>(w);
  }
}

// The child: one simulation, its row sent back as one JSON line.
[[noreturn]] void child_main(const Options& o, const Point& p, uint64_t seed, int fd) {
  std::signal(SIGINT, SIG_IGN);  // the parent decides what an interrupt does to us
  std::signal(SIGTERM, SIG_DFL);
  if (spdlog::get_level() > spdlog::level::debug) spdlog::set_level(spdlog::level::warn);
  json msg;
  int rc = 0;
  try {
    std::vector<std::string> sets = o.sets;
    for (auto& s : p.as_sets()) sets.push_back(std::move(s));
    sets.push_back(fmt::format("seed={}", seed));
    const config::Experiment x = config::load_experiment(o.experiment, sets);
    engine::route_simgrid_log_to_spdlog();
    const engine::SimResult r = engine::simulate(x);
    msg["row"] = report::to_json(engine::result_row(x, r));
  } catch (const std::exception& e) {
    msg["error"] = e.what();
    rc = 1;
  }
  write_all(fd, msg.dump() + "\n");
  ::close(fd);
  std::fflush(nullptr);
  ::_exit(rc);
}

std::string json_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return fmt::format("{}", v.get<int64_t>());
  if (v.is_number_float()) return report::format_value(v.get<double>());
  if (v.is_null()) return "";
  return v.dump();
}

json manifest_json(const Options& o, const Plan& plan, const std::string& started) {
  json m;
  m["experiment"] = plan.base.name;
  m["experiment_file"] = fs::absolute(o.experiment).string();
  m["experiment_hash"] = plan.hash;
  m["simloop_version"] = o.provenance.version;
  m["git_revision"] = o.provenance.git_rev;
  m["git_dirty"] = o.provenance.git_dirty;
  m["sets"] = o.sets;
  m["config"] = plan.config;
  m["sweep"] = plan.spec.definition;
  m["keys"] = plan.spec.keys;
  m["repeats"] = plan.spec.repeats;
  m["seed_rule"] =
      "fnv1a64(\"SEED|key=value;...|REPEAT\"), one splitmix64 step, mod 2^52; SEED is config.seed";
  json pts = json::array();
  for (const auto& p : plan.spec.points) {
    json settings = json::object();
    for (const auto& s : p.settings) settings[s.key] = s.value;
    json seeds = json::array();
    for (int r = 0; r < plan.spec.repeats; ++r) seeds.push_back(run_seed(plan.base.seed, p, r));
    pts.push_back({{"index", p.index}, {"hash", p.hash}, {"settings", settings}, {"seeds", seeds}});
  }
  m["points"] = pts;
  m["shard"] = {{"k", o.shard.k}, {"n", o.shard.n}};
  m["results"] = plan.csv.filename().string();
  m["started_at"] = started;
  m["finished_at"] = nullptr;
  m["status"] = "running";
  return m;
}

}  // namespace

fs::path manifest_of(const fs::path& csv) {
  fs::path m = csv;
  m.replace_extension(".json");
  return m;
}

Plan make_plan(const Options& o) {
  Plan p;
  p.base = config::load_experiment(o.experiment, o.sets);
  p.spec = load_spec(o.experiment);
  for (const auto& k : p.spec.keys)
    if (k == "seed")
      throw config::ConfigError(
          fmt::format("{}: sweep: seed cannot be swept: use repeats, which derive a seed per run",
                      o.experiment.string()));
  p.config = config::to_json(p.base);
  json identity = p.config;
  identity.erase("output");  // where results go is not what they are
  std::string text = identity.dump() + "\n" + std::to_string(p.spec.repeats) + "\n";
  for (const auto& pt : p.spec.points) {
    text += pt.hash + ":";
    for (const auto& s : pt.as_sets()) text += s + ";";
    text += "\n";
  }
  p.hash = hex64(fnv1a(text));
  // Every point's configuration is checked now, not halfway through.
  for (const auto& pt : p.spec.points) {
    std::vector<std::string> sets = o.sets;
    for (auto& s : pt.as_sets()) sets.push_back(std::move(s));
    try {
      config::load_experiment(o.experiment, sets);
    } catch (const config::ConfigError& e) {
      throw config::ConfigError(fmt::format("{}: sweep point {} ({}): {}", o.experiment.string(),
                                            pt.index, fmt::join(pt.as_sets(), " "), e.what()));
    }
  }
  const fs::path dir = o.output_dir.empty() ? fs::path(p.base.output.dir) : fs::path(o.output_dir);
  std::string stem = p.base.name + "-sweep";
  if (o.shard.n > 1) stem += fmt::format("-shard-{}-of-{}", o.shard.k, o.shard.n);
  p.csv = dir / (stem + ".csv");
  p.manifest = manifest_of(p.csv);
  return p;
}

Summary run_sweep(const Options& o, const Plan& plan) {
  const auto t0 = Clock::now();
  const std::string started = utc_now();
  if (!o.resume && fs::exists(plan.csv))
    throw MismatchError(fmt::format("{}: already exists; use --resume to complete it, or remove it",
                                    plan.csv.string()));
  json manifest = manifest_json(o, plan, started);
  if (o.resume && fs::exists(plan.manifest)) {
    const json old = read_json(plan.manifest);
    if (old.value("experiment_hash", "") != plan.hash)
      throw MismatchError(
          fmt::format("{}: results of a different sweep (experiment hash {}, this one {}); not "
                      "resuming into them",
                      plan.manifest.string(), old.value("experiment_hash", "?"), plan.hash));
    manifest["started_at"] = old.value("started_at", started);
    manifest["resumed_at"] = old.value("resumed_at", json::array());
    manifest["resumed_at"].push_back(started);
  } else if (o.resume && fs::exists(plan.csv)) {
    throw MismatchError(fmt::format("{}: has no manifest ({}); cannot tell which sweep it holds",
                                    plan.csv.string(), plan.manifest.string()));
  }
  const auto header = header_of(plan);
  ResultStore store(plan.csv, header, o.resume);
  report::write_file_atomic(plan.manifest, manifest.dump(2) + "\n");

  struct Todo {
    const Point* point;
    int repeat;
  };
  std::vector<Todo> todo;
  Summary sum;
  for (const auto& p : plan.spec.points) {
    if (!o.shard.contains(p)) continue;
    for (int r = 0; r < plan.spec.repeats; ++r) {
      ++sum.runs;
      if (store.done().count({p.index, r}) != 0) {
        ++sum.skipped;
        continue;
      }
      todo.push_back({&p, r});
    }
  }
  if (sum.skipped > 0) spdlog::info("resuming: {} of {} runs already done", sum.skipped, sum.runs);
  spdlog::info("sweep {}: {} points x {} repeats{}, {} runs to do, {} at a time -> {}",
               plan.base.name, plan.spec.points.size(), plan.spec.repeats,
               o.shard.n > 1 ? fmt::format(" (shard {}/{})", o.shard.k, o.shard.n) : "",
               todo.size(), o.jobs, plan.csv.string());

  g_interrupts = 0;
  g_terminate = 0;
  struct sigaction sa {
  }, old_int{}, old_term{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: poll() returns at once
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  std::map<int, Job> running;  // by the read end of its pipe
  size_t next = 0;
  bool killed = false, told = false;
  const bool tty = o.progress;
  size_t last_logged_decile = 0;
  auto progress = [&](bool final_line) {
    const double el = std::chrono::duration<double>(Clock::now() - t0).count();
    const size_t done = sum.skipped + sum.finished;
    std::string eta = "-";
    if (sum.finished > 0 && done < sum.runs)
      eta = hms(el / static_cast<double>(sum.finished) * static_cast<double>(sum.runs - done));
    const std::string line = fmt::format("{}/{} done, {} failed, {} running, elapsed {}, ETA {}",
                                         done, sum.runs, sum.failed, running.size(), hms(el), eta);
    if (tty) {
      std::fprintf(stderr, "\r\x1b[K%s%s", line.c_str(), final_line ? "\n" : "");
      std::fflush(stderr);
    } else if (!final_line && sum.runs > 0) {
      const size_t decile = done * 10 / sum.runs;
      if (decile > last_logged_decile) {
        last_logged_decile = decile;
        spdlog::info("{}", line);
      }
    }
  };

  auto record = [&](const Job& j, int status) {
    const Point& p = plan.spec.points[j.point];
    const double process_s = std::chrono::duration<double>(Clock::now() - j.start).count();
    json msg;
    const auto nl = j.out.find('\n');
    if (nl != std::string::npos) {
      try {
        msg = json::parse(j.out.substr(0, nl));
      } catch (const json::exception&) {
      }
    }
    std::string state, error;
    if (WIFSIGNALED(status)) {
      if (killed) return;  // we stopped it: not a result, --resume runs it again
      state = "crashed";
      error =
          fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else if (msg.contains("row")) {
      const std::string outcome = msg["row"].value("outcome", "");
      state = outcome == "ok" ? "ok" : "fault";
      if (state != "ok") error = msg["row"].value("detail", outcome);
    } else {
      state = "error";
      error = msg.contains("error") ? msg["error"].get<std::string>()
                                    : fmt::format("exited with status {} and no result",
                                                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    std::vector<std::string> fields;
    for (const auto& col : header) {
      if (col == "point") {
        fields.push_back(std::to_string(p.index));
      } else if (col == "repeat") {
        fields.push_back(std::to_string(j.repeat));
      } else if (col == "point_hash") {
        fields.push_back(p.hash);
      } else if (col == "status") {
        fields.push_back(state);
      } else if (col == "error") {
        fields.push_back(error);
      } else if (col == "process_s") {
        fields.push_back(fmt::format("{:.6f}", process_s));
      } else if (std::find(plan.spec.keys.begin(), plan.spec.keys.end(), col) !=
                 plan.spec.keys.end()) {
        fields.push_back(p.value_of(col));
      } else if (msg.contains("row") && msg["row"].contains(col)) {
        fields.push_back(json_text(msg["row"][col]));
      } else if (col == "seed") {
        fields.push_back(std::to_string(j.seed));
      } else if (col == "experiment") {
        fields.push_back(plan.base.name);
      } else {
        fields.push_back("");
      }
    }
    store.append(fields);
    ++sum.finished;
    if (state != "ok") {
      ++sum.failed;
      if (tty) std::fprintf(stderr, "\r\x1b[K");
      spdlog::warn("point {} repeat {} ({}): {}: {}", p.index, j.repeat,
                   fmt::join(p.as_sets(), " "), state, error);
    }
  };

  while (next < todo.size() || !running.empty()) {
    if (g_interrupts > 0 && !told) {
      told = true;
      if (tty) std::fprintf(stderr, "\r\x1b[K");
      spdlog::warn(
          "interrupted: starting no more runs; waiting for {} running (Ctrl-C again to stop them)",
          running.size());
    }
    if ((g_interrupts > 1 || g_terminate) && !killed) {
      killed = true;
      for (const auto& [fd, j] : running) ::kill(j.pid, SIGKILL);
    }
    while (g_interrupts == 0 && next < todo.size() && static_cast<int>(running.size()) < o.jobs) {
      const Todo t = todo[next++];
      int fds[2];
      if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
      const uint64_t seed = run_seed(plan.base.seed, *t.point, t.repeat);
      std::fflush(nullptr);
      const auto start = Clock::now();
      const pid_t pid = ::fork();
      if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
      if (pid == 0) {
        ::close(fds[0]);
        for (const auto& [fd, j] : running) ::close(fd);
        child_main(o, *t.point, seed, fds[1]);
      }
      // Only the child holds the write end, so its exit is our EOF.
      ::close(fds[1]);
      running.emplace(fds[0], Job{pid, t.point->index, t.repeat, seed, {}, start});
    }
    if (running.empty()) break;
    std::vector<pollfd> pfds;
    for (const auto& [fd, j] : running) pfds.push_back({fd, POLLIN, 0});
    const int n = ::poll(pfds.data(), pfds.size(), 250);
    if (n < 0 && errno != EINTR)
      throw std::runtime_error(fmt::format("poll: {}", std::strerror(errno)));
    for (const auto& pf : pfds) {
      if (n <= 0 || (pf.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      Job& j = running.at(pf.fd);
      char buf[4096];
      const ssize_t got = ::read(pf.fd, buf, sizeof buf);
      if (got > 0) {
        j.out.append(buf, static_cast<size_t>(got));
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      int status = 0;
      while (::waitpid(j.pid, &status, 0) < 0 && errno == EINTR) {
      }
      ::close(pf.fd);
      const Job done = std::move(j);
      running.erase(pf.fd);
      record(done, status);
    }
    progress(false);
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  progress(true);

  sum.interrupted = g_interrupts > 0 && sum.skipped + sum.finished < sum.runs;
  sum.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  manifest["finished_at"] = utc_now();
  manifest["status"] = sum.interrupted ? "interrupted" : "complete";
  manifest["runs"] = sum.runs;
  manifest["runs_recorded"] = sum.skipped + sum.finished;
  manifest["failed_this_session"] = sum.failed;
  manifest["wall_s_this_session"] = sum.wall_s;
  report::write_file_atomic(plan.manifest, manifest.dump(2) + "\n");
  return sum;
}

MergeSummary merge(const fs::path& out, const std::vector<fs::path>& shards) {
  if (shards.empty()) throw MismatchError("merge: no shard results given");
  json first;
  Table all;
  std::map<std::pair<size_t, int>, std::vector<std::string>> rows;
  MergeSummary sum;
  json from = json::array();
  for (const auto& s : shards) {
    const fs::path mp = manifest_of(s);
    if (!fs::exists(mp))
      throw MismatchError(fmt::format("{}: no manifest ({}); cannot tell which sweep it holds",
                                      s.string(), mp.string()));
    const json m = read_json(mp);
    if (first.is_null()) {
      first = m;
    } else if (m.value("experiment_hash", "") != first.value("experiment_hash", "")) {
      throw MismatchError(
          fmt::format("{}: experiment hash {} differs from {}'s {}: these are results of different "
                      "sweeps; not merging",
                      s.string(), m.value("experiment_hash", "?"), shards.front().string(),
                      first.value("experiment_hash", "?")));
    }
    const Table t = read_csv(s);
    if (all.header.empty()) {
      all.header = t.header;
    } else if (t.header != all.header) {
      throw MismatchError(
          fmt::format("{}: its columns differ from {}'s", s.string(), shards.front().string()));
    }
    const int pc = t.column("point"), rc = t.column("repeat");
    if (pc < 0 || rc < 0)
      throw MismatchError(fmt::format("{}: not sweep results (no point, repeat)", s.string()));
    for (const auto& r : t.rows) {
      const auto key = std::make_pair(std::stoul(r[pc]), std::stoi(r[rc]));
      if (!rows.emplace(key, r).second) ++sum.duplicates;
    }
    from.push_back({{"results", fs::absolute(s).string()},
                    {"shard", m.value("shard", json())},
                    {"status", m.value("status", "")}});
  }
  std::string text;
  for (size_t i = 0; i < all.header.size(); ++i) {
    if (i != 0) text += ",";
    text += csv_field(all.header[i]);
  }
  text += '\n';
  for (const auto& [k, r] : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      if (i != 0) text += ",";
      text += csv_field(r[i]);
    }
    text += '\n';
  }
  sum.rows = rows.size();
  const size_t expected = first.value("points", json::array()).size() * first.value("repeats", 1);
  sum.missing = expected > sum.rows ? expected - sum.rows : 0;
  report::write_file_atomic(out, text);
  json m = first;
  m["shard"] = nullptr;
  m["merged_from"] = from;
  m["merged_at"] = utc_now();
  m["results"] = out.filename().string();
  m["runs"] = expected;
  m["runs_recorded"] = sum.rows;
  m["status"] = sum.missing == 0 ? "complete" : "incomplete";
  report::write_file_atomic(manifest_of(out), m.dump(2) + "\n");
  return sum;
}

}  // namespace simloop::sweep
