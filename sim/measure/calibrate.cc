#include "measure/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "measure/native.h"
#include "models/cycle_account.h"
#include "net/stack.h"
#include "report/table.h"

namespace simloop::measure {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- NNLS

Eigen::VectorXd nnls(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, int max_iter) {
  if (A.rows() != b.size()) throw std::invalid_argument("nnls: A and b have different row counts");
  const Eigen::Index n = A.cols();
  if (max_iter <= 0) max_iter = static_cast<int>(3 * n + 10);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  std::vector<bool> passive(static_cast<size_t>(n), false);
  const double tol = 1e-10 * std::max(1.0, A.norm() * b.norm());

  // Least squares on the passive columns only; the others are held at 0.
  auto solve_passive = [&] {
    std::vector<Eigen::Index> idx;
    for (Eigen::Index j = 0; j < n; ++j)
      if (passive[static_cast<size_t>(j)]) idx.push_back(j);
    Eigen::MatrixXd Ap(A.rows(), static_cast<Eigen::Index>(idx.size()));
    for (size_t k = 0; k < idx.size(); ++k) Ap.col(static_cast<Eigen::Index>(k)) = A.col(idx[k]);
    const Eigen::VectorXd zp = Ap.completeOrthogonalDecomposition().solve(b);
    Eigen::VectorXd z = Eigen::VectorXd::Zero(n);
    for (size_t k = 0; k < idx.size(); ++k) z(idx[k]) = zp(static_cast<Eigen::Index>(k));
    return z;
  };

  for (int outer = 0; outer < max_iter; ++outer) {
    const Eigen::VectorXd w = A.transpose() * (b - A * x);  // the negative gradient
    Eigen::Index best = -1;
    double best_w = tol;
    for (Eigen::Index j = 0; j < n; ++j)
      if (!passive[static_cast<size_t>(j)] && w(j) > best_w) best_w = w(j), best = j;
    if (best < 0) break;  // Kuhn-Tucker conditions hold
    passive[static_cast<size_t>(best)] = true;
    for (int inner = 0; inner < max_iter; ++inner) {
      Eigen::VectorXd z = solve_passive();
      bool feasible = true;
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<size_t>(j)] && z(j) <= 0) feasible = false;
      if (feasible) {
        x = z;
        break;
      }
      // Step from x towards z as far as feasibility allows, then drop the
      // variables that reached zero.
      double alpha = std::numeric_limits<double>::infinity();
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<size_t>(j)] && z(j) <= 0)
          alpha = std::min(alpha, x(j) / (x(j) - z(j)));
      x += alpha * (z - x);
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<size_t>(j)] && x(j) <= 1e-15)
          passive[static_cast<size_t>(j)] = false, x(j) = 0;
    }
  }
  return x.cwiseMax(0.0);
}

// ---------------------------------------------------------------- points

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// The keys that name a configuration, in this order.
constexpr std::array<const char*, 4> kConfigKeys = {"payload", "dest", "align", "copy"};

}  // namespace

int Point::payload() const {
  const auto it = keys.find("payload");
  return it == keys.end() ? 0 : std::stoi(it->second);
}

std::string Point::label() const {
  std::string s;
  for (const char* k : kConfigKeys)
    if (auto it = keys.find(k); it != keys.end())
      s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, it->second);
  return s;
}

std::optional<Stat> parse_stat(const std::string& s) {
  if (s == "median") return Stat::median;
  if (s == "min") return Stat::min;
  return std::nullopt;
}

std::vector<Point> read_points(const std::vector<fs::path>& csvs, Stat stat) {
  std::vector<Point> points;
  std::vector<std::vector<double>> syscalls;
  for (const auto& path : csvs) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error(fmt::format("{}: cannot open", path.string()));
    std::string line;
    if (!std::getline(f, line))
      throw std::runtime_error(fmt::format("{}: empty file", path.string()));
    const auto header = report::split_csv_line(line);
    auto col = [&](const std::string& name) {
      const auto it = std::find(header.begin(), header.end(), name);
      return it == header.end() ? -1 : static_cast<int>(it - header.begin());
    };
    const int c_source = col("source"), c_ns = col("ns_per_packet"), c_fault = col("fault"),
              c_sys = col("null_syscall_ns");
    if (c_source < 0 || c_ns < 0)
      throw std::runtime_error(
          fmt::format("{}: needs source and ns_per_packet columns", path.string()));
    int lineno = 1;
    while (std::getline(f, line)) {
      ++lineno;
      if (line.empty()) continue;
      const auto cells = report::split_csv_line(line);
      if (cells.size() != header.size())
        throw std::runtime_error(fmt::format("{}:{}: {} fields, header has {}", path.string(),
                                             lineno, cells.size(), header.size()));
      if (c_fault >= 0 && !cells[static_cast<size_t>(c_fault)].empty()) continue;
      Point p;
      p.source = cells[static_cast<size_t>(c_source)];
      for (const char* k : kConfigKeys)
        if (int c = col(k); c >= 0) p.keys[k] = cells[static_cast<size_t>(c)];
      const double ns = std::stod(cells[static_cast<size_t>(c_ns)]);
      if (!(ns > 0)) continue;
      auto it = std::find_if(points.begin(), points.end(), [&](const Point& q) {
        return q.source == p.source && q.keys == p.keys;
      });
      if (it == points.end()) {
        points.push_back(p);
        syscalls.emplace_back();
        it = points.end() - 1;
      }
      it->ns.push_back(ns);
      if (c_sys >= 0)
        syscalls[static_cast<size_t>(it - points.begin())].push_back(
            std::stod(cells[static_cast<size_t>(c_sys)]));
    }
  }
  for (size_t i = 0; i < points.size(); ++i) {
    points[i].ns_value = stat == Stat::min
                             ? *std::min_element(points[i].ns.begin(), points[i].ns.end())
                             : median(points[i].ns);
    points[i].null_syscall_ns = median(syscalls[i]);
  }
  return points;
}

bool Split::trains(const Point& p) const {
  for (const auto& [key, values] : allow) {
    const auto it = p.keys.find(key);
    if (it == p.keys.end() || values.count(it->second) == 0) return false;
  }
  return true;
}

std::vector<std::string> Split::specs() const {
  std::vector<std::string> out;
  for (const auto& [key, values] : allow) {
    std::string s = key + "=";
    bool first = true;
    for (const auto& v : values) s += (first ? "" : ",") + v, first = false;
    out.push_back(s);
  }
  return out;
}

Split parse_split(const std::vector<std::string>& specs) {
  Split s;
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw std::invalid_argument(fmt::format("--train '{}': expected KEY=V1,V2,...", spec));
    std::set<std::string> values;
    size_t start = eq + 1;
    while (start <= spec.size()) {
      const size_t comma = std::min(spec.find(',', start), spec.size());
      if (comma > start) values.insert(spec.substr(start, comma - start));
      start = comma + 1;
    }
    s.allow.emplace_back(spec.substr(0, eq), std::move(values));
  }
  return s;
}

// ---------------------------------------------------------------- native features

const std::vector<Param>& native_params() {
  static const std::vector<Param> params = [] {
    using M = models::MachineCosts;
    using S = models::StackCosts;
    std::vector<Param> p;
    for (size_t f = 0; f < net::kFnCount; ++f)
      p.push_back({fmt::format("stack.functions.{}", net::fn_name(static_cast<net::Fn>(f))),
                   [f](M&, S& s) -> double& { return s.fn_cycles[f]; }});
    p.push_back(
        {"stack.alloc.mbuf_cycles", [](M&, S& s) -> double& { return s.mbuf_alloc_cycles; }});
    p.push_back(
        {"stack.alloc.cluster_cycles", [](M&, S& s) -> double& { return s.cluster_alloc_cycles; }});
    p.push_back({"stack.free.mbuf_cycles", [](M&, S& s) -> double& { return s.mbuf_free_cycles; }});
    p.push_back(
        {"stack.free.cluster_cycles", [](M&, S& s) -> double& { return s.cluster_free_cycles; }});
    p.push_back({"stack.cksum_cycles_per_byte",
                 [](M&, S& s) -> double& { return s.cksum_cycles_per_byte; }});
    p.push_back(
        {"machine.copy.setup_cycles", [](M& m, S&) -> double& { return m.copy_setup_cycles; }});
    p.push_back({"machine.copy.cycles_per_byte",
                 [](M& m, S&) -> double& { return m.copy_cycles_per_byte; }});
    p.push_back({"machine.copy.unaligned_cycles_per_byte",
                 [](M& m, S&) -> double& { return m.copy_unaligned_cycles_per_byte; }});
    p.push_back({"machine.unaligned_access_cycles",
                 [](M& m, S&) -> double& { return m.unaligned_access_cycles; }});
    p.push_back({"machine.unaligned_line_cross_cycles",
                 [](M& m, S&) -> double& { return m.unaligned_line_cross_cycles; }});
    return p;
  }();
  return params;
}

namespace {

std::string key_or(const Point& p, const char* key, const char* fallback) {
  const auto it = p.keys.find(key);
  return it == p.keys.end() ? fallback : it->second;
}

// Cycles per packet the timing model charges for `p`'s configuration, the
// packets driven exactly as `measure native` drives them.
double priced_per_packet(const Point& p, const models::MachineCosts& m, const models::StackCosts& s,
                         int packets) {
  const auto dest = parse_dest(key_or(p, "dest", "loopback"));
  const auto align = net::parse_align_policy(key_or(p, "align", "none"));
  const auto copy = net::parse_loop_copy(key_or(p, "copy", "m_copy"));
  if (!dest || !align || !copy)
    throw std::invalid_argument("unknown dest, align or copy in " + p.label());
  net::StackOptions so;
  so.align = *align;
  so.loop_copy = *copy;
  if (*dest == Dest::self) so.useloopback = false;
  net::MbufPool pool;
  models::CycleAccount acc(m, s);
  net::Stack<models::CycleAccount> st(pool, acc, so);
  const int rx = st.socket(), tx = st.socket();
  constexpr uint16_t kPort = 5001;
  st.bind(rx, 0, kPort);
  std::vector<uint8_t> buf(static_cast<size_t>(std::max(p.payload(), 1)), 0x5a);
  std::vector<uint8_t> rbuf(65536);
  auto service = [&] {
    st.netisr_run();
    int got = 0;
    while (st.recvfrom(rx, rbuf.data(), static_cast<int>(rbuf.size()), &got) == 0) {
    }
    st.nic_txeof();
  };
  auto send = [&] {
    int err = st.sendto(tx, buf.data(), p.payload(), dest_addr(*dest), kPort);
    for (int tries = 0; err == ENOBUFS && tries < 1000; ++tries) {
      service();
      err = st.sendto(tx, buf.data(), p.payload(), dest_addr(*dest), kPort);
    }
    service();
  };
  for (int i = 0; i < 64; ++i) send();  // zones and queues in their steady state
  acc.take();
  for (int i = 0; i < packets && !st.fault(); ++i) send();
  if (st.fault())
    throw std::runtime_error(p.label() + ": the stack faulted: " + st.fault()->describe());
  return models::total(acc.take()) / packets;
}

}  // namespace

std::vector<double> native_features(const Point& p, int packets) {
  std::vector<double> f;
  for (const auto& param : native_params()) {
    models::MachineCosts m{};
    models::StackCosts s{};
    param.ref(m, s) = 1;
    f.push_back(priced_per_packet(p, m, s, packets));
  }
  return f;
}

double native_price(const std::vector<double>& features, const models::MachineCosts& m,
                    const models::StackCosts& s) {
  models::MachineCosts mm = m;
  models::StackCosts ss = s;
  double ns = 0;
  const auto& params = native_params();
  for (size_t i = 0; i < params.size() && i < features.size(); ++i)
    ns += features[i] * params[i].ref(mm, ss);
  return ns;
}

// ---------------------------------------------------------------- the fit

double Fit::rms_rel_residual() const {
  double sq = 0;
  for (const auto& r : residuals) sq += std::pow((r.fitted_ns - r.measured_ns) / r.measured_ns, 2);
  return residuals.empty() ? 0 : std::sqrt(sq / static_cast<double>(residuals.size()));
}

nlohmann::json Fit::to_json() const {
  nlohmann::json j;
  j["source"] = source;
  j["train"] = split.specs();
  j["units"] = "ns (cycles at clock_hz 1e9)";
  j["params"] = nlohmann::json::object();
  for (size_t i = 0; i < names.size(); ++i) j["params"][names[i]] = values[i];
  j["training_points"] = training_points;
  j["held_out_points"] = held_out_points;
  j["rms_relative_residual"] = rms_rel_residual();
  for (const auto& r : residuals)
    j["residuals"].push_back(
        {{"point", r.label}, {"measured_ns", r.measured_ns}, {"fitted_ns", r.fitted_ns}});
  return j;
}

Fit Fit::from_json(const nlohmann::json& j) {
  Fit f;
  f.source = j.at("source").get<std::string>();
  f.split = parse_split(j.at("train").get<std::vector<std::string>>());
  for (const auto& [k, v] : j.at("params").items()) {
    f.names.push_back(k);
    f.values.push_back(v.get<double>());
  }
  f.training_points = j.value("training_points", 0);
  f.held_out_points = j.value("held_out_points", 0);
  return f;
}

namespace {

constexpr double kKernelSyscallsPerPacket = 2;  // sendto() and one recv()

double param(const Fit& fit, const std::string& name) {
  for (size_t i = 0; i < fit.names.size(); ++i)
    if (fit.names[i] == name) return fit.values[i];
  throw std::runtime_error("the fit has no parameter " + name);
}

}  // namespace

double kernel_predict_ns(const Fit& fit, const Point& p) {
  return kKernelSyscallsPerPacket * p.null_syscall_ns + param(fit, "fixed_ns") +
         param(fit, "per_byte_ns") * p.payload();
}

Fit calibrate(const std::vector<Point>& points, const std::string& source, const Split& split) {
  Fit fit;
  fit.source = source;
  fit.split = split;
  std::vector<const Point*> train;
  for (const auto& p : points) {
    if (p.source != source) continue;
    (split.trains(p) ? train.push_back(&p) : void(++fit.held_out_points));
  }
  fit.training_points = static_cast<int>(train.size());
  if (train.empty())
    throw std::runtime_error(fmt::format("no {} points in the training set", source));

  // Rows of A are a point's features, b its measured ns minus known terms;
  // both divided by the measured ns so that relative errors are minimised.
  std::vector<std::vector<double>> feats;
  std::vector<double> known;
  if (source == "kernel") {
    fit.names = {"fixed_ns", "per_byte_ns"};
    for (const Point* p : train) {
      feats.push_back({1.0, static_cast<double>(p->payload())});
      known.push_back(kKernelSyscallsPerPacket * p->null_syscall_ns);
    }
  } else if (source == "native") {
    for (const auto& param_ : native_params()) fit.names.push_back(param_.key);
    for (const Point* p : train) {
      feats.push_back(native_features(*p));
      known.push_back(0);
    }
  } else {
    throw std::runtime_error("calibrate: unknown source '" + source + "' (native or kernel)");
  }
  const auto rows = static_cast<Eigen::Index>(train.size());
  const auto cols = static_cast<Eigen::Index>(fit.names.size());
  Eigen::MatrixXd A(rows, cols);
  Eigen::VectorXd b(rows);
  for (Eigen::Index i = 0; i < rows; ++i) {
    const double w = 1.0 / train[static_cast<size_t>(i)]->ns_value;
    for (Eigen::Index j = 0; j < cols; ++j)
      A(i, j) = feats[static_cast<size_t>(i)][static_cast<size_t>(j)] * w;
    b(i) = (train[static_cast<size_t>(i)]->ns_value - known[static_cast<size_t>(i)]) * w;
  }
  // Columns scaled to unit norm: events per packet and bytes per packet
  // differ by orders of magnitude. A column the training points never
  // exercise stays at 0.
  Eigen::VectorXd scale(cols);
  for (Eigen::Index j = 0; j < cols; ++j) {
    const double nrm = A.col(j).norm();
    scale(j) = nrm > 0 ? 1.0 / nrm : 0.0;
    A.col(j) *= scale(j);
  }
  const Eigen::VectorXd x = nnls(A, b).cwiseProduct(scale);
  fit.values.assign(x.data(), x.data() + x.size());
  for (size_t i = 0; i < train.size(); ++i) {
    double ns = known[i];
    for (size_t j = 0; j < fit.values.size(); ++j) ns += feats[i][j] * fit.values[j];
    fit.residuals.push_back({train[i]->label(), train[i]->ns_value, ns});
  }
  return fit;
}

void fitted_costs(const Fit& fit, models::MachineCosts& m, models::StackCosts& s) {
  m = {};
  s = {};
  m.clock_hz = 1e9;
  for (const auto& p : native_params()) p.ref(m, s) = param(fit, p.key);
}

namespace {

// A fitted profile's three files: machine and stack, and an experiment on
// the measured path (127.0.0.1, a receiver, no interrupts, no wire to wait
// for) that names both.
void write_profile_files(const fs::path& dir, const std::string& name, const std::string& machine,
                         const std::string& stack, const std::string& comment,
                         const std::string& description) {
  const std::string experiment = fmt::format(
      "# {1}\n"
      "name: {0}\n"
      "description: {2}\n"
      "machine: {0}-machine.yaml\n"
      "stack: {0}-stack.yaml\n"
      "workload:\n  payload: 18\n  packets: 20000\n  dest: loopback\n  receive: true\n"
      "  link:\n    bandwidth_bps: 1e13\n    latency_s: 0\n"
      "interrupts:\n  enabled: false\n"
      "options:\n  align: none\n  copy: m_copy\n"
      "seed: 1\n",
      name, comment, description);
  fs::create_directories(dir);
  report::write_file_atomic(dir / (name + "-machine.yaml"), machine);
  report::write_file_atomic(dir / (name + "-stack.yaml"), stack);
  report::write_file_atomic(dir / (name + ".yaml"), experiment);
}

}  // namespace

void write_native_profile(const Fit& fit, const fs::path& dir, const std::string& name) {
  models::MachineCosts m;
  models::StackCosts s;
  fitted_costs(fit, m, s);
  const std::string head = fmt::format(
      "# Fitted by `simloop calibrate` to native runs of the real stack on this machine\n"
      "# (training points: {}). clock_hz is 1e9, so every cost below is in ns.\n",
      fmt::join(fit.split.specs(), "; "));
  std::string machine =
      head + fmt::format(
                 "name: {0}-machine\n"
                 "description: this machine running the native harness (fitted)\n"
                 "clock_hz: 1e9\n"
                 "syscall:\n  entry_cycles: 0  # the native harness makes no system call\n"
                 "  exit_cycles: 0\n"
                 "user_loop_cycles: 0\n"
                 "copy:\n  setup_cycles: {1:.6g}\n  cycles_per_byte: {2:.6g}\n"
                 "  unaligned_cycles_per_byte: {3:.6g}\n"
                 "unaligned_access_cycles: {4:.6g}\n"
                 "unaligned_line_cross_cycles: {5:.6g}\n",
                 name, m.copy_setup_cycles, m.copy_cycles_per_byte,
                 m.copy_unaligned_cycles_per_byte, m.unaligned_access_cycles,
                 m.unaligned_line_cross_cycles);
  std::string stack = head + fmt::format(
                                 "name: {}-stack\ndescription: the real stack's costs on this "
                                 "machine (fitted)\nfunctions:\n",
                                 name);
  for (size_t f = 0; f < net::kFnCount; ++f)
    stack += fmt::format("  {}: {:.6g}\n", net::fn_name(static_cast<net::Fn>(f)), s.fn_cycles[f]);
  stack += fmt::format(
      "alloc:\n  mbuf_cycles: {:.6g}\n  cluster_cycles: {:.6g}\n"
      "free:\n  mbuf_cycles: {:.6g}\n  cluster_cycles: {:.6g}\n"
      "cksum_cycles_per_byte: {:.6g}\n",
      s.mbuf_alloc_cycles, s.cluster_alloc_cycles, s.mbuf_free_cycles, s.cluster_free_cycles,
      s.cksum_cycles_per_byte);
  write_profile_files(dir, name, machine, stack,
                      "The calibrated profile on the native harness's path: 127.0.0.1, no\n"
                      "# interrupts, the harness's NIC ring completing at once (no wire).",
                      "simulated with the costs fitted to native runs of this machine");
}

namespace {

// Bytes the simulated stack copies per byte of payload on the loopback path
// with a receiver (uiomove in and out): the slope between two payloads.
double copied_bytes_per_payload_byte() {
  auto copied = [](int payload) {
    net::MbufPool pool;
    net::CountingProbe probe;
    net::Stack<net::CountingProbe> st(pool, probe);
    const int rx = st.socket(), tx = st.socket();
    st.bind(rx, 0, 5001);
    std::vector<uint8_t> buf(static_cast<size_t>(payload)), rbuf(65536);
    if (st.sendto(tx, buf.data(), payload, net::kLoopAddr, 5001) != 0)
      throw std::runtime_error("counting copies: sendto failed");
    st.netisr_run();
    int got = 0;
    st.recvfrom(rx, rbuf.data(), static_cast<int>(rbuf.size()), &got);
    uint64_t n = 0;
    for (uint64_t b : probe.copied_bytes) n += b;
    return static_cast<double>(n);
  };
  return (copied(1100) - copied(100)) / 1000.0;
}

}  // namespace

void write_kernel_profile(const Fit& fit, const std::vector<Point>& points, const fs::path& dir,
                          const std::string& name) {
  std::vector<double> nulls;
  for (const auto& p : points)
    if (p.source == "kernel" && fit.split.trains(p)) nulls.push_back(p.null_syscall_ns);
  if (nulls.empty()) throw std::runtime_error("kernel profile: no training points");
  std::sort(nulls.begin(), nulls.end());
  const size_t m = nulls.size() / 2;
  const double null_ns = nulls.size() % 2 ? nulls[m] : (nulls[m - 1] + nulls[m]) / 2;
  const double per_copied_byte = param(fit, "per_byte_ns") / copied_bytes_per_payload_byte();
  const std::string head = fmt::format(
      "# Fitted by `simloop calibrate` to runs of this machine's own kernel (training\n"
      "# points: {}). clock_hz is 1e9, so every cost below is in ns.\n",
      fmt::join(fit.split.specs(), "; "));
  const std::string machine =
      head +
      fmt::format(
          "name: {0}-machine\n"
          "description: this machine's kernel, UDP over loopback (fitted)\n"
          "clock_hz: 1e9\n"
          "syscall:  # a null system call ({1:.6g} ns, median over the training repeats)\n"
          "  entry_cycles: {2:.6g}\n  exit_cycles: {2:.6g}\n"
          "user_loop_cycles: 0\n"
          "copy:  # the fitted cost per payload byte over the bytes copied per payload byte\n"
          "  setup_cycles: 0\n  cycles_per_byte: {3:.6g}\n  unaligned_cycles_per_byte: 0\n"
          "unaligned_access_cycles: 0\n"
          "unaligned_line_cross_cycles: 0\n",
          name, null_ns, null_ns / 2, per_copied_byte);
  std::string stack = head + fmt::format(
                                 "name: {}-stack\ndescription: the kernel's fixed cost per "
                                 "packet, all on sendto (fitted)\nfunctions:\n",
                                 name);
  for (size_t f = 0; f < net::kFnCount; ++f)
    stack += fmt::format("  {}: {:.6g}\n", net::fn_name(static_cast<net::Fn>(f)),
                         f == static_cast<size_t>(net::Fn::sendto) ? param(fit, "fixed_ns") : 0.0);
  stack +=
      "alloc:\n  mbuf_cycles: 0\n  cluster_cycles: 0\n"
      "free:\n  mbuf_cycles: 0\n  cluster_cycles: 0\n"
      "cksum_cycles_per_byte: 0\n";
  write_profile_files(dir, name, machine, stack,
                      "The calibrated kernel profile on the kernel loop's path: 127.0.0.1,\n"
                      "# each datagram received by a second system call.",
                      "simulated with the costs fitted to this machine's kernel");
}

}  // namespace simloop::measure
