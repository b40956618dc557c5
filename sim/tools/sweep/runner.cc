#include "sim/tools/sweep/runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

#include "sim/engine/columns.h"
#include "sim/engine/simulation.h"
#include "sim/report/safe_file.h"
#include "sim/report/table.h"
#include "sim/support/process_pool.h"
#include "sim/support/yaml_input.h"

namespace simloop::sweep {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string hms(double s) {
  const auto t = static_cast<long>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

// Where a kept run's files go: <runs>/<point hash>-<repeat>.json and .log.
fs::path kept_run(const Plan& plan, const Point& p, int repeat, const char* ext) {
  return plan.runs_dir / fmt::format("{}-{}{}", p.hash, repeat, ext);
}

// The child: one simulation, its row sent back as one JSON line (with
// --keep-runs also the run's whole document, and its log in a file).
int child_main(const Options& o, const Plan& plan, const Point& p, int repeat, uint64_t seed,
               int fd) {
  if (o.keep_runs) {
    // The run's log in its own file; on failure it goes where it always did.
    const int log = report::open_no_follow(kept_run(plan, p, repeat, ".log"),
                                           O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) {
      ::dup2(log, STDERR_FILENO);
      ::close(log);
      // Plain text (no terminal colours), at least info.
      const auto level = std::min(spdlog::get_level(), spdlog::level::info);
      spdlog::set_default_logger(std::make_shared<spdlog::logger>(
          "run", std::make_shared<spdlog::sinks::stderr_sink_mt>()));
      spdlog::set_pattern("[%l] %v");
      spdlog::set_level(level);
    }
  } else if (spdlog::get_level() > spdlog::level::debug) {
    spdlog::set_level(spdlog::level::warn);
  }
  json msg;
  int rc = 0;
  try {
    // The point over the base the plan loaded, as if the file were loaded
    // with all of them (config::load_over): the file is not read again.
    std::vector<std::string> sets = p.as_sets();
    sets.push_back(fmt::format("seed={}", seed));
    const config::Experiment x = config::load_over(plan.base, o.sets, sets);
    // SimGrid's log is routed to spdlog by prepare_engine, before the fork.
    const engine::SimResult r = engine::simulate(x);
    msg["row"] = report::to_json(engine::result_row(x, r));
    // Costs left undetermined that the run used: the sweep says so once.
    for (const auto& u : r.undetermined) msg["undetermined"].push_back(u.key);
    if (o.keep_runs && o.run_document) msg["document"] = o.run_document(x, r);
  } catch (const std::exception& e) {
    msg["error"] = e.what();
    rc = 1;
  }
  spdlog::default_logger()->flush();
  proc::write_all(fd, msg.dump() + "\n");
  return rc;
}

// The manifest's "points": each point's hash, one a line, by index. Its
// settings follow from the sweep's definition ("sweep") and its seeds from
// the seed rule, so a million points take 20 MB, not a configuration each.
std::string points_text(const Plan& plan) {
  std::string out;
  out.reserve(plan.size() * 24 + 8);
  out += '[';
  for (size_t i = 0; i < plan.size(); ++i) {
    out += i == 0 ? "\n    \"" : ",\n    \"";
    out += hex64(plan.hashes[i]);
    out += '"';
  }
  return out + (plan.size() == 0 ? "]" : "\n  ]");
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
  if (!o.unset.empty()) m["unset"] = o.unset;  // absent in manifests of sweeps without
  m["config"] = plan.config;
  m["sweep"] = plan.spec.definition;
  m["sweep_yaml"] = plan.spec.text;  // in file order: the points are made from it
  m["keys"] = plan.spec.keys;
  m["repeats"] = plan.spec.repeats;
  m["seed_rule"] =
      "fnv1a64(\"SEED|key=value;...|REPEAT\"), one splitmix64 step, mod 2^52; SEED is config.seed";
  m["point_hash_rule"] = kPointHashRule;
  m["points_checked"] = plan.checked;
  m["shard"] = {{"k", o.shard.k}, {"n", o.shard.n}};
  m["results"] = plan.csv.filename().string();
  if (o.keep_runs)
    m["kept_runs"] = plan.runs_dir.filename().string() + "/<point_hash>-<repeat>.json";
  m["started_at"] = started;
  m["finished_at"] = nullptr;
  m["status"] = "running";
  m["pid"] = ::getpid();
  return m;
}

}  // namespace

namespace {

// Rewrites the results file with its rows in (point, repeat) order. It
// holds where each row is (about a hundred bytes a row) and a window of the
// file, neither the file's text nor its rows parsed: a sweep of a million
// runs ends without needing gigabytes to tidy its file.
void sort_results(const fs::path& csv, const std::vector<std::string>& header) {
  std::vector<InputFile> files;
  files.emplace_back(csv);
  std::vector<RowAt> rows = read_rows(files.front()).at;
  sort_by_run(rows);
  RowLines lines(files);
  report::AtomicFile out(csv);
  out.write(csv_line(header));
  for (const RowAt& a : rows) out.write(rewritten_row(lines.line(a)));
  out.commit();
}

// What a sweep finds in its output place and keeps: the rows of finished
// runs it does not run again, after checking they are this sweep's.
struct Existing {
  ResumePlan rp;
  bool have_rows = false;
};

// Reads what is there, refuses results of another sweep, and leaves the
// output place ready to append to: the manifest written first (results are
// never without one), rows of points no longer in the sweep kept aside, and
// the results file holding the header and the kept rows.
Existing prepare_results(const Options& o, const Plan& plan, const std::vector<std::string>& header,
                         json& manifest, const std::string& points, const std::string& started) {
  Existing ex;
  bool cut_short = false;
  // The old results stay open until the kept rows are written again; of
  // each row only where it is is held (not its fields, nor the file's text).
  std::vector<InputFile> old_file;
  StoredRows old;
  if (fs::exists(plan.csv)) {
    old_file.emplace_back(plan.csv);
    // A file cut short before its header or first row holds no result.
    if (has_whole_line(old_file.front())) {
      old = read_rows(old_file.front());
      ex.have_rows = !old.ids.empty();
      cut_short = ends_cut_short(old_file.front());  // a partial last row: written anew without it
    }
  }
  RowLines old_lines(old_file);
  const bool have_manifest = fs::exists(plan.manifest);
  if (have_manifest) {
    // We hold the lock, so a manifest that says running is stale: its sweep
    // ended without saying so. Only said, not relied on: a manifest that
    // cannot be read is dealt with below, where it matters.
    try {
      if (read_json(plan.manifest, false).value("status", json()) == json("running"))
        spdlog::warn(
            "{}: the sweep that wrote it ended without finishing (killed, or its disk "
            "filled)",
            plan.csv.string());
    } catch (const StoreError&) {
    }
  }
  if (ex.have_rows && !o.resume)
    throw MismatchError(fmt::format("{}: already exists; use --resume to complete it, or remove it",
                                    plan.csv.string()));

  ResumePlan& rp = ex.rp;
  if (ex.have_rows) {
    const auto& ids = old.ids;
    // Rows must be of points the manifest lists, or, at the same index, of
    // points of this sweep (a resume stopped between writing the results
    // and the manifest leaves rows re-indexed to the new points).
    KnownPoints here;
    here.hashes.reserve(plan.size());
    for (const uint64_t h : plan.hashes) here.hashes.push_back(h);
    const PointHashes& hashes = here.hashes;
    here.repeats = plan.spec.repeats;
    if (have_manifest) {
      const std::string prev_text = read_text(plan.manifest);
      const json prev = parse_manifest(prev_text, plan.manifest.string(), false);
      if (prev.value("point_hash_rule", json()) != json(kPointHashRule))
        throw MismatchError(fmt::format(
            "{}: written by an older simloop whose point hashes follow another rule; not "
            "resuming into it (finish it with that version, or use another -o)",
            plan.manifest.string()));
      const KnownPoints listed = known_points(prev, plan.manifest.string(), prev_text);
      // Of this very sweep (its experiment hash), the manifest lists this
      // sweep's points, in order: one whose points were edited since would
      // file rows under points they were not run for.
      if (prev.value("experiment_hash", json()) == json(plan.hash))
        for (size_t i = 0; i < std::max(listed.hashes.size(), plan.size()); ++i)
          if (i >= listed.hashes.size() || i >= plan.size() ||
              !listed.hashes.is(i, hex64(plan.hashes[i])))
            throw MismatchError(fmt::format(
                "{}: points[{}] is {}, but this sweep's point {} is {}: the manifest was edited "
                "since the sweep wrote it; not resuming (remove the manifest to keep the rows by "
                "their own point hashes, or use another -o)",
                plan.manifest.string(), i,
                i < listed.hashes.size() ? "'" + listed.hashes.text(i) + "'" : "missing", i,
                i < plan.size() ? "'" + hex64(plan.hashes[i]) + "'" : "not there"));
      check_known(ids, listed, plan.csv.string(), &here);
      std::set<std::string> swept(plan.spec.keys.begin(), plan.spec.keys.end());
      if (prev.contains("keys") && prev["keys"].is_array())
        for (const auto& k : prev["keys"])
          if (k.is_string()) swept.insert(k.get<std::string>());
      const auto changed = changed_keys(prev.value("config", json::object()), plan.config, swept);
      if (!changed.empty())
        throw MismatchError(fmt::format(
            "{}: results of a sweep whose base configuration differs in {}; not resuming into "
            "them (use another -o, or remove them)",
            plan.manifest.string(), fmt::join(changed, ", ")));
      manifest["started_at"] = prev.value("started_at", started);
      manifest["resumed_at"] = prev.value("resumed_at", json::array());
      if (!manifest["resumed_at"].is_array()) manifest["resumed_at"] = json::array();
      manifest["resumed_at"].push_back(started);
    } else {
      // No manifest (its write never happened): the rows' point hashes say
      // which configuration each ran, so rows of points this sweep has are
      // kept, and rows of no point of it are refused.
      const auto at = indices_of(ids, hashes);
      std::vector<RowId> ids_here = ids;
      for (auto& id : ids_here)
        if (const auto p = at.find(id.hash)) id.point = *p;
      check_known(ids_here, here, plan.csv.string());
      spdlog::warn("{}: no manifest beside it; keeping its rows by their point hashes",
                   plan.csv.string());
    }
    rp = plan_resume(old, plan.csv.string(), hashes, plan.spec.repeats, header, plan.spec.keys,
                     o.retry_crashed);
    rp.rewrite = rp.rewrite || cut_short;
  } else if (fs::exists(plan.csv)) {
    spdlog::info("{}: holds no finished run; starting afresh", plan.csv.string());
  }

  // Everything is read and checked before anything is written, so a
  // refused resume leaves the files as they were.
  std::string aside_before, aside;
  if (!rp.dropped.empty()) {
    if (fs::exists(plan.dropped)) aside_before = read_text(plan.dropped);
    std::vector<std::vector<std::string>> rows;
    for (const RowAt& r : rp.dropped) rows.push_back(stored_row(old_lines.line(r)));
    aside = aside_text(aside_before, plan.dropped.string(), old.header, rows);
  }
  old = {};
  const std::string whole_manifest = manifest_text(manifest, points);
  if (!ex.have_rows) {
    // The manifest first: results are never without one.
    write_file_atomic(plan.manifest, whole_manifest);
    write_file_atomic(plan.csv, csv_line(header));
    return ex;
  }
  // Resuming: rows set aside first (a run twice there is kept once), then
  // the kept rows, then the manifest listing the new points. Every row in
  // the results is of a point the manifest lists at each step, so a resume
  // stopped at any step can be resumed. The kept rows are written whole to
  // a temporary file before anything is put in place.
  std::optional<report::AtomicFile> csv;
  if (rp.rewrite) {
    csv.emplace(plan.csv);
    csv->write(csv_line(header));
    auto setting = [&](size_t i, const std::string& key) {
      return plan.spec.point(i).value_of(key);
    };
    for (const RowAt& r : rp.kept)
      csv->write(csv_line(kept_row(rp, r, old_lines.line(r), header, setting)));
    csv->sync();
  }
  if (aside != aside_before) write_file_atomic(plan.dropped, aside);
  if (csv) csv->commit();
  write_file_atomic(plan.manifest, whole_manifest);
  return ex;
}

// One run still to do.
struct Todo {
  size_t point;
  int repeat;
};

// A finished run's row in the results file, and how it ended.
struct Recorded {
  std::vector<std::string> fields;
  std::string state, error;
  json document;                          // with --keep-runs: what `simloop run` writes as its JSON
  std::vector<std::string> undetermined;  // costs left undetermined (`~`) the run used
};

// The row of a run from what its child sent back (one JSON line: its result
// row, or the error that stopped it) and how the child ended.
Recorded row_of(const Plan& plan, const std::vector<std::string>& header, const Todo& t,
                const proc::Outcome& out) {
  const Point p = plan.point(t.point);
  const double process_s = std::chrono::duration<double>(Clock::now() - out.started).count();
  json msg;
  const auto nl = out.output.find('\n');
  if (nl != std::string::npos) {
    try {
      msg = json::parse(out.output.substr(0, nl));
    } catch (const json::exception&) {
    }
  }
  Recorded rec;
  if (msg.contains("document")) rec.document = std::move(msg["document"]);
  for (const auto& k : msg.value("undetermined", json::array()))
    if (k.is_string()) rec.undetermined.push_back(k.get<std::string>());
  if (out.signaled()) {
    rec.state = "crashed";
    rec.error = fmt::format("killed by signal {} ({})", out.signal(), strsignal(out.signal()));
  } else if (msg.contains("row")) {
    const std::string outcome = msg["row"].value("outcome", "");
    rec.state = outcome == "ok" ? "ok" : "fault";
    if (rec.state != "ok") rec.error = msg["row"].value("detail", outcome);
  } else {
    rec.state = "error";
    rec.error = msg.contains("error")
                    ? msg["error"].get<std::string>()
                    : fmt::format("exited with status {} and no result", out.exit_code());
  }
  for (const auto& col : header) {
    if (col == "point") {
      rec.fields.push_back(std::to_string(p.index));
    } else if (col == "repeat") {
      rec.fields.push_back(std::to_string(t.repeat));
    } else if (col == "point_hash") {
      rec.fields.push_back(p.hash);
    } else if (col == "status") {
      rec.fields.push_back(rec.state);
    } else if (col == "error") {
      rec.fields.push_back(rec.error);
    } else if (col == "process_s") {
      rec.fields.push_back(fmt::format("{:.6f}", process_s));
    } else if (std::find(plan.spec.keys.begin(), plan.spec.keys.end(), col) !=
               plan.spec.keys.end()) {
      rec.fields.push_back(p.value_of(col));
    } else if (msg.contains("row") && msg["row"].contains(col)) {
      rec.fields.push_back(json_text(msg["row"][col]));
    } else if (col == "seed") {
      rec.fields.push_back(std::to_string(run_seed(plan.base.seed, p, t.repeat)));
    } else if (col == "experiment") {
      rec.fields.push_back(plan.base.name);
    } else {
      rec.fields.push_back("");
    }
  }
  return rec;
}

// The progress line: redrawn in place on a terminal, else a log line at
// each tenth of the runs.
class Progress {
 public:
  Progress(const Summary& sum, const proc::ProcessPool& pool, Clock::time_point t0, bool tty)
      : sum_(sum), pool_(pool), t0_(t0), tty_(tty) {}

  void show(bool final_line) {
    const double el = std::chrono::duration<double>(Clock::now() - t0_).count();
    const size_t done = sum_.skipped + sum_.finished;
    std::string eta = "-";
    if (sum_.finished > 0 && done < sum_.runs)
      eta = hms(el / static_cast<double>(sum_.finished) * static_cast<double>(sum_.runs - done));
    const std::string line =
        fmt::format("{}/{} done, {} failed, {} running, elapsed {}, ETA {}", done, sum_.runs,
                    sum_.failed, pool_.running(), hms(el), eta);
    if (tty_) {
      std::fprintf(stderr, "\r\x1b[K%s%s", line.c_str(), final_line ? "\n" : "");
      std::fflush(stderr);
    } else if (!final_line && sum_.runs > 0) {
      const size_t decile = done * 10 / sum_.runs;
      if (decile > last_logged_decile_) {
        last_logged_decile_ = decile;
        spdlog::info("{}", line);
      }
    }
  }

  // Clears the line before a log message, on a terminal.
  void clear() const {
    if (tty_) std::fprintf(stderr, "\r\x1b[K");
  }

 private:
  const Summary& sum_;
  const proc::ProcessPool& pool_;
  Clock::time_point t0_;
  bool tty_;
  size_t last_logged_decile_ = 0;
};

}  // namespace

Summary run_sweep(const Options& o, const Plan& plan) {
  const auto t0 = Clock::now();
  const std::string started = utc_now();
  // Held until we return: no other sweep writes here meanwhile, and the
  // check of what exists and the creation below are one step for others.
  const StoreLock lock(plan.lock, plan.csv.string());
  // Refused before anything is written, not halfway through.
  // A sweep reads back its results, manifest and rows set aside: a device
  // or a FIFO cannot hold them, and is never replaced.
  for (const auto& p : {plan.csv, plan.manifest, plan.dropped})
    report::require_ordinary(p, "a sweep reads its results back (name an ordinary file with -o)");
  if (o.keep_runs) {
    std::error_code ec;
    const auto st = fs::symlink_status(plan.runs_dir, ec);
    if (fs::is_symlink(st))
      throw report::LinkError(fmt::format(
          "{}: is a symbolic link; simloop does not write through links", plan.runs_dir.string()));
    if (fs::exists(st) && !fs::is_directory(st))
      throw report::OutputRefused(
          fmt::format("{}: is not a directory; --keep-runs keeps each run's files in it",
                      plan.runs_dir.string()));
    // The runs' files are replaced as runs finish: anything there that is not
    // an ordinary file (a link, a device planted under a run's name) is
    // refused now, not found by a run halfway through.
    if (fs::exists(st))
      for (const auto& e : fs::directory_iterator(plan.runs_dir, ec))
        report::require_ordinary(e.path(), "--keep-runs replaces each run's files");
  }
  const auto header = header_of(plan);
  json manifest = manifest_json(o, plan, started);
  const std::string points = points_text(plan);
  Existing ex = prepare_results(o, plan, header, manifest, points, started);
  // The rows kept and set aside are in their files now; of them only which
  // runs are done is needed, not the rows for the whole of the sweep.
  const size_t dropped = ex.rp.dropped.size();
  ex.rp.kept = {};
  ex.rp.dropped = {};
  const ResumePlan& rp = ex.rp;
  ResultStore store(plan.csv, header);
  if (o.keep_runs) {
    std::error_code ec;
    fs::create_directory(plan.runs_dir, ec);
    if (ec)
      throw report::WriteError(
          fmt::format("{}: cannot create the directory: {}", plan.runs_dir.string(), ec.message()));
  }

  std::vector<Todo> todo;
  Summary sum;
  sum.dropped = dropped;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (!o.shard.contains(i)) continue;
    for (int r = 0; r < plan.spec.repeats; ++r) {
      ++sum.runs;
      if (rp.done.contains(i, r)) {
        ++sum.skipped;
        continue;
      }
      todo.push_back({i, r});
    }
  }
  if (ex.have_rows)
    spdlog::info(
        "resuming: kept {} rows, {} runs to add, dropped {} rows{}{}{}", sum.skipped, todo.size(),
        sum.dropped,
        sum.dropped > 0
            ? fmt::format(" of points no longer in the sweep (kept in {})", plan.dropped.string())
            : "",
        rp.retried > 0 ? fmt::format("; {} crashed runs to run again", rp.retried) : "",
        rp.rerun > 0 ? fmt::format("; {} runs without a result to run again", rp.rerun) : "");
  spdlog::info("sweep {}: {} points x {} repeats{}, {} runs to do, {} at a time -> {}",
               plan.base.name, plan.size(), plan.spec.repeats,
               o.shard.n > 1 ? fmt::format(" (shard {}/{})", o.shard.k, o.shard.n) : "",
               todo.size(), o.jobs, plan.csv.string());

  // Each run forks from here: SimGrid's start-up is paid once, not per run.
  engine::prepare_engine();
  proc::PoolOptions po;
  po.jobs = o.jobs;
  po.handle_interrupts = true;
  po.close_in_child = {lock.fd(), store.fd()};  // children keep neither open
  proc::ProcessPool pool(po);
  Progress progress(sum, pool, t0, o.progress);
  std::map<std::string, int64_t> undetermined;  // cost key -> runs that used it
  auto record = [&](const proc::Outcome& out) {
    if (out.stopped) return;  // we stopped it: not a result, --resume runs it again
    const Todo& t = todo[out.job];
    const Recorded rec = row_of(plan, header, t, out);
    // The run's document before its row: a recorded row's files are there.
    if (o.keep_runs && !rec.document.is_null())
      write_file_atomic(kept_run(plan, plan.point(t.point), t.repeat, ".json"),
                        rec.document.dump(2) + "\n");
    store.append(rec.fields);
    ++sum.finished;
    for (const auto& k : rec.undetermined) ++undetermined[k];
    // After the row is on disk: what a watcher of the log can wait for.
    spdlog::debug("recorded point {} repeat {}: {} ({} of {} runs recorded)", t.point, t.repeat,
                  rec.state, sum.skipped + sum.finished, sum.runs);
    if (rec.state != "ok") {
      ++sum.failed;
      progress.clear();
      spdlog::warn("point {} repeat {} ({}): {}: {}", t.point, t.repeat,
                   fmt::join(plan.point(t.point).as_sets(), " "), rec.state, rec.error);
    }
  };
  proc::ProcessPool::Callbacks cb;
  cb.on_done = record;
  cb.on_tick = [&] { progress.show(false); };
  cb.on_interrupt = [&](size_t running) {
    progress.clear();
    spdlog::warn(
        "interrupted: starting no more runs; waiting for {} running (Ctrl-C again to stop them)",
        running);
  };
  proc::ProcessPool::Summary ran;
  try {
    ran = pool.run(
        todo.size(),
        [&](size_t i, int fd) {
          const Point p = plan.point(todo[i].point);
          return child_main(o, plan, p, todo[i].repeat, run_seed(plan.base.seed, p, todo[i].repeat),
                            fd);
        },
        cb);
  } catch (const std::exception& e) {
    // A failure to record (a full disk) stops the sweep: no more runs start,
    // the running ones are stopped (by the pool), and the manifest says why.
    progress.clear();
    try {
      store.sync();
    } catch (const std::exception&) {
      // The error that stopped the sweep says enough.
    }
    manifest["finished_at"] = utc_now();
    manifest["status"] = "failed";
    manifest["error"] = e.what();
    try {
      write_file_atomic(plan.manifest, manifest_text(manifest, points));
    } catch (const std::exception& m) {
      // The manifest still says running, and no one holds the lock: readers
      // take it as stopped (effective_status).
      spdlog::error("{}", m.what());
    }
    throw;
  }
  progress.show(true);
  store.sync();
  if (!undetermined.empty()) {
    std::vector<std::string> used;
    for (const auto& [k, runs] : undetermined) used.push_back(fmt::format("{} ({} runs)", k, runs));
    spdlog::warn(
        "runs of this sweep used costs left undetermined (`~`), priced 0, so their cycles and "
        "rates leave them out: {}. `simloop run --from-sweep {} --point N` names the profile",
        fmt::join(used, ", "), plan.csv.string());
  }

  // Rows were appended as runs finished; the file keeps them in point order.
  try {
    sort_results(plan.csv, header);
  } catch (const std::exception& e) {
    spdlog::warn("{} (its rows stay in the order the runs finished)", e.what());
  }

  sum.interrupted = ran.interrupts > 0 && sum.skipped + sum.finished < sum.runs;
  sum.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  manifest["finished_at"] = utc_now();
  manifest["status"] = sum.interrupted ? "interrupted" : "complete";
  manifest["runs"] = sum.runs;
  manifest["runs_recorded"] = sum.skipped + sum.finished;
  manifest["failed_this_session"] = sum.failed;
  manifest["wall_s_this_session"] = sum.wall_s;
  write_file_atomic(plan.manifest, manifest_text(manifest, points));
  return sum;
}

}  // namespace simloop::sweep
