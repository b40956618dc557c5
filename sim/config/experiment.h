// An experiment: everything one simulated run needs, as validated values.
//
// Experiments are YAML files. A machine and a stack cost profile are named
// (looked up in configs/machines and configs/stacks) or given by path, and
// an experiment may override any of their fields. Every key is checked:
// unknown keys, wrong types and out-of-range values are errors that name
// the file, line, column and key (ConfigError).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/costs.h"
#include "models/fetch_plan.h"
#include "models/icache.h"
#include "models/optional_models.h"
#include "sim/layout/build.h"
#include "sim/layout/layout.h"
#include "sim/stack/stack_set.h"
#include "sim/stack/workload/path.h"
#include "sim/support/host.h"
#include "sim/support/input_error.h"
#include "sim/support/key_spec.h"

namespace simloop::config {

using workload::Dest;
using workload::dest_name;

struct Workload {
  int payload = 18;  // UDP payload bytes
  int64_t packets = 100000;
  double duration_s = 0;  // > 0: simulate this long instead
  Dest dest = Dest::wire;
  double enobufs_sleep_s = 0.018;  // ttcp sleeps 18 ms when sendto() says ENOBUFS
  double link_bandwidth_bps = 1e9;
  double link_latency_s = 10e-6;
  bool receive = true;     // a receiver drains the socket (loopback, broadcast)
  bool connected = false;  // the sender connect()s once and send()s (stacks that honour it)
  // What serves the host after each send: the simulated host (interrupts
  // and the netisr as their models say), or the native harness's loop
  // (full, send-only), which fetches the same code in the same order as
  // `simloop icache` replays for a harness build.
  workload::Service service = workload::Service::simulated;
};

// workload.*: the ttcp-like sender, its destination and the wire.
inline constexpr auto kWorkloadKeys = std::to_array<support::KeySpec<Workload>>({
    {"payload",
     "UDP payload bytes per datagram, up to what IP carries in one packet (65507); the stack "
     "and path may take less: an Ethernet path its MTU less 28, the bsd stack 9188. There is no "
     "IP fragmentation.",
     &support::at<&Workload::payload>, 0, net::kMaxUdpPayload},
    {"packets", "Datagrams to send (unless duration_s is set).", &support::at<&Workload::packets>,
     1, 1e12},
    {"duration_s", "If > 0: simulated seconds to send for, instead of a count.",
     &support::at<&Workload::duration_s>, 0, 1e5},
    {"dest",
     "loopback: 127.0.0.1 through lo0 and the netisr; broadcast: em0's broadcast, a copy loops "
     "back through if_simloop and the frame goes on the wire; wire: a peer host over the link; "
     "self: em0's own address, routed through em0 (no lo0 route), the frame itself loops back; "
     "veth (linux stack): a peer in another network namespace over a veth pair (veth_xmit, "
     "the peer's backlog poll), sized by options.linux.veth_mtu.",
     support::Choice<Workload>{&workload::dest_names,
                               [](Workload& w, std::string_view v) {
                                 w.dest = workload::parse_dest(v).value_or(Dest::wire);
                               },
                               [](const Workload& w) { return dest_name(w.dest); }}},
    {"enobufs_sleep_s", "How long the sender sleeps when sendto() fails with ENOBUFS.",
     &support::at<&Workload::enobufs_sleep_s>, 0, 10},
    {"receive", "A receiver reads the looped datagrams (its cycles count).",
     &support::at<&Workload::receive>},
    {"service",
     "What serves the host after each sendto(). simulated: the simulated host (the netisr runs "
     "at once where the datagram loops back, the receiver reads what is queued, the NIC's "
     "completions as the interrupt model says). full: the native harness's loop "
     "(simloop-harness, `simloop icache --service full`): the netisr, recvfrom() until it says "
     "EWOULDBLOCK and transmit completion after every send, so the code runs in the order "
     "`simloop icache` replays. send-only: as full, with transmit completion only.",
     support::Choice<Workload>{
         &workload::service_names,
         [](Workload& w, std::string_view v) { w.service = *workload::parse_service(v); },
         [](const Workload& w) { return workload::service_name(w.service); }}},
    {"connected",
     "The sender connect()s its socket once and sends with send(): the Linux stack then keeps "
     "the route and the IP ID counter on the socket; otherwise sendto() looks the route up for "
     "every datagram.",
     &support::at<&Workload::connected>},
    {"link", "The wire between the host and its peer."},
    {"link.bandwidth_bps", "Link rate in bits per second.",
     &support::at<&Workload::link_bandwidth_bps>, 1e3, 1e13},
    {"link.latency_s", "One-way propagation latency in seconds.",
     &support::at<&Workload::link_latency_s>, 0, 10},
});

// A real build as the code layout (sim/layout/build.h): file paths as given,
// resolved against the experiment's directory when loaded.
struct BuildLayout {
  std::string nm;       // the build's symbol map; "" for none
  std::string map;      // its ld.lld link map (with `order`)
  std::string order;    // a function order to relink the build in
  std::string profile;  // hot ranges and walks (simloop measure profile)
  std::string owners;   // "" for configs/harness/owners.txt
  double hot_fraction = 1.0;
};

// Which code layout feeds the I-cache model, and how it is transformed.
struct LayoutOptions {
  std::string kernel;      // a name from configs/layouts or a path; "" for none
  std::string user;        // the sender's own code, linked beside the kernel
  std::string pad_object;  // insert pad_bytes of never-executed code in this object
  int64_t pad_bytes = 0;
  int64_t pad_offset = -1;  // where in the object (-1: at its end)
  std::string more_pads;    // "OBJECT:BYTES,...": padding at other objects' ends
  std::string move_to_end;  // move this object to the end of the link
  int64_t function_align = 0;
  std::string order;  // comma-separated objects to link first, in this order
  BuildLayout build;  // instead of kernel: a real build's maps
};

// layout.*: the code layout, and a real build in place of one.
inline constexpr auto kLayoutKeys = std::to_array<support::KeySpec<LayoutOptions>>({
    {"kernel", "Kernel layout: a name from configs/layouts or a path (\"\": none).",
     &support::at<&LayoutOptions::kernel>},
    {"user", "The sender's own code: a name from configs/layouts or a path.",
     &support::at<&LayoutOptions::user>},
    {"pad_object", "Insert pad_bytes of never-executed code into this kernel object.",
     &support::at<&LayoutOptions::pad_object>},
    {"pad_bytes", "Bytes of padding (see pad_object).", &support::at<&LayoutOptions::pad_bytes>, 0,
     1 << 24},
    {"pad_offset", "Where in pad_object the padding goes (-1: at its end).",
     &support::at<&LayoutOptions::pad_offset>, -1, 1 << 24},
    {"more_pads",
     "More padding, each at the end of its kernel object, after pad_object's: comma-separated "
     "OBJECT:BYTES pairs (what `simloop layout` prints when it pads an object the experiment "
     "does not).",
     &support::at<&LayoutOptions::more_pads>},
    {"move_to_end", "Move this kernel object to the end of the link.",
     &support::at<&LayoutOptions::move_to_end>},
    {"function_align", "Align every kernel function to this many bytes (0: as laid out).",
     &support::at<&LayoutOptions::function_align>, 0, 4096},
    {"order", "Kernel objects to link first, comma-separated, in this order.",
     &support::at<&LayoutOptions::order>},
    {"build",
     "A real build as the code layout, instead of layout.kernel: the files `simloop icache` and "
     "`simloop layout --nm` read. Paths are relative to the experiment's directory (then the "
     "working directory, then the data directory); maps may be gzip-compressed. Use it with "
     "workload.service full or send-only for the harness's own loop."},
    {"build.nm",
     "The build's symbol map as `simloop measure cachegrind -o` writes it beside its CSV (`nm -S "
     "--defined-only -n` lines and the PLT sections nm does not list; a map from plain nm lacks "
     "the PLT, and the run warns of the hot functions it misses).",
     &support::at<&LayoutOptions::build, &BuildLayout::nm>},
    {"build.profile",
     "Hot ranges and walks from `simloop measure profile` (\"\": whole symbols, times "
     "hot_fraction).",
     &support::at<&LayoutOptions::build, &BuildLayout::profile>},
    {"build.owners",
     "'symbol owner' lines naming what runs each function (\"\": configs/harness/owners.txt).",
     &support::at<&LayoutOptions::build, &BuildLayout::owners>},
    {"build.map", "The build's ld.lld link map (-Map), to relink it in layout.build.order.",
     &support::at<&LayoutOptions::build, &BuildLayout::map>},
    {"build.order",
     "A function order (as ld.lld's --symbol-ordering-file takes it, e.g. the advice of "
     "`simloop layout --nm --map`): the build's sections placed as ld.lld would place them in "
     "this order. Needs layout.build.map.",
     &support::at<&LayoutOptions::build, &BuildLayout::order>},
    {"build.hot_fraction",
     "Without a profile: the part of each symbol taken as hot, from its start.",
     &support::at<&LayoutOptions::build, &BuildLayout::hot_fraction>, 0.001, 1},
});

// Effects that differ between separate runs but not within one.
struct Variance {
  bool page_colouring = false;          // random physical pages for code (L2 is physically indexed)
  int64_t phys_pages = 65536;           // physical pages to choose from
  int64_t link_perturbation_bytes = 0;  // random padding of up to this much in a random object
};

// variance.*
inline constexpr auto kVarianceKeys = std::to_array<support::KeySpec<Variance>>({
    {"page_colouring",
     "Random physical pages for the code, so the physically indexed L2 sees a different "
     "colouring each run.",
     &support::at<&Variance::page_colouring>},
    {"phys_pages", "Physical pages the random placement chooses from.",
     &support::at<&Variance::phys_pages>, 1, 1 << 30},
    {"link_perturbation_bytes",
     "If > 0: pad a randomly chosen kernel object by a random 0..N bytes (16-byte steps).",
     &support::at<&Variance::link_perturbation_bytes>, 0, 1 << 20},
});

struct EngineOptions {
  int max_batch = 256;  // packets charged in one simulated execution at most
  // Replay the I-cache's answer to a fetch sequence it has seen from the
  // same state (identical results; off only to show that they are).
  bool icache_replay = true;
};

// engine.*
inline constexpr auto kEngineKeys = std::to_array<support::KeySpec<EngineOptions>>({
    {"max_batch",
     "Most datagrams priced in one batch, and about the most spent in one simulated execution; "
     "batches also end where an interrupt is due (its handler then runs in the same execution), "
     "so this changes speed, not results.",
     &support::at<&EngineOptions::max_batch>, 1, 1e6},
    {"icache_replay",
     "Replay the I-cache model's answer to a packet's code fetches once they leave the cache as "
     "they found it, and each step of the fetch model once seen, instead of simulating them "
     "again; results are identical (off only to show that: every event followed, every line "
     "fetched), the I-cache model about ten times faster.",
     &support::at<&EngineOptions::icache_replay>},
});

struct Output {
  std::string dir = "out";
  bool csv = true;
  bool json = true;
};

// output.*
inline constexpr auto kOutputKeys = std::to_array<support::KeySpec<Output>>({
    {"dir", "Directory for result files, relative to the working directory.",
     &support::at<&Output::dir>},
    {"csv", "Write <dir>/<name>.csv (one tidy row per run).", &support::at<&Output::csv>},
    {"json", "Write <dir>/<name>.json (results and the resolved configuration).",
     &support::at<&Output::json>},
});

struct Experiment {
  std::string name = "unnamed";
  std::string description;
  std::string machine_name, stack_name;
  std::string machine_description, stack_description;
  // What era the machine's costs are of, and how they were made (a
  // comparison across eras or sources compares hosts, not only settings).
  int machine_year = 0;                   // 0: not said
  std::string machine_costs = "unknown";  // estimated, measured or unknown
  // The host a measured machine was fitted on (empty for one estimated from
  // what was published): a run on another host is warned of.
  support::HostFacts machine_host;
  // The name or path the machine and the stack were chosen by (the
  // experiment's `machine: NAME`, or --set machine=NAME); empty when a map
  // chose it, whose fields may differ from the named file's.
  std::string machine_ref, stack_ref;
  // The stack is a fit to measured totals (stack.fitted_fixed_costs): its
  // sendto and soreceive hold the fitted fixed costs of sending and
  // receiving, not those functions' own.
  bool stack_fitted_fixed_costs = false;
  models::MachineCosts machine;
  // Which stack runs (stack.kind: its FnTable) and its prices; the first
  // of the list (sim/stack/stacks.h) unless the stack profile says otherwise.
  models::StackCosts stack{.fns = stacks::fn_tables().front()};
  // The costs left undetermined (a cost key given as `~`, YAML's null: no
  // measurement fixes it): each priced 0, by key, with where it was so
  // marked ("FILE:LINE:COL", or "--set"). A run that uses one says so.
  std::map<std::string, std::string> undetermined;
  Workload workload;
  models::InterruptCosts interrupts;
  bool cache_enabled = false;
  models::ICacheConfig icache;
  models::FetchMode fetch = models::FetchMode::call_sites;
  models::ModelConfigs models;  // the optional timing models (models/optional_models.h)
  LayoutOptions layout;
  Variance variance;
  net::HostOptions options;              // the host's (options.*), each stack takes its part
  stacks::StackOptionSet stack_options;  // each stack's own (its kind's keys)
  uint64_t seed = 1;
  EngineOptions engine;
  Output output;
  std::filesystem::path source;  // the experiment file
  bool has_sweep = false;        // the file has a sweep: section (read by sim/sweep)
  // The linked code layout the I-cache model is fed with (with the cache on).
  std::shared_ptr<const models::LinkedLayout> code;
  // layout.build's files resolved against the experiment's directory (the
  // default owners file filled in); empty without layout.build.
  models::BuildFiles build_files;
  std::string perturbation;  // what the random link perturbation of this run did
  // Keys of the experiment file loading was told to leave out (--unset),
  // kept so that a load over this one (load_over) leaves them out too.
  std::vector<std::string> unset;
  // What loading left out of the experiment file and why ("FILE:LINE:COL:
  // KEY: ..."): keys of another stack than the one --set stack= chose, a
  // machine or stack map that --set replaced. For the reader, not errors.
  std::vector<std::string> notes;
};

// Where referenced machines, stacks and layouts named by name are searched
// for, in order: ../configs next to the experiment, configs/ beside it,
// ./configs, then the configs/ of the data directory (data_root.h). One
// referred to by a relative path is looked for from the experiment's
// directory, then the working directory, then the data directory.
std::vector<std::filesystem::path> config_roots(const std::filesystem::path& experiment_file);

// Loads and validates an experiment; `sets` are "path.to.key=value"
// overrides applied last. `machine=NAME` and `stack=NAME` choose another
// profile: the file's machine or stack (and its map of fields) gives way,
// and the file's keys that the chosen stack does not take are left out,
// each with a note (Experiment::notes); a --set of such a key is an error.
// `unset` are keys (or sections) of the file to leave out, as if not
// written: each must be set in the file. Throws ConfigError.
Experiment load_experiment(const std::filesystem::path& file,
                           const std::vector<std::string>& sets = {},
                           const std::vector<std::string>& unset = {});
// load_experiment(base.source, base_sets + sets, base.unset), where `base`
// is what load_experiment(base.source, base_sets, unset) gave: the file is
// not read again when `sets` are plain keys (a sweep's points, a run's seed).
Experiment load_over(const Experiment& base, const std::vector<std::string>& base_sets,
                     const std::vector<std::string>& sets);

// A layout with the experiment's layout.* transforms applied (order, padding,
// move to end, function alignment; not the random link perturbation).
models::Layout transform_layout(models::Layout kernel, const LayoutOptions& options);
// layout.more_pads's pairs, in order. Throws std::invalid_argument naming
// the item that is not OBJECT:BYTES with BYTES a whole number in [1, 2^24].
std::vector<std::pair<std::string, uint64_t>> parse_more_pads(const std::string& text);
// The file a profile choice (`machine` or `stack`: a name or a path) finds
// for the experiment `experiment_file`, as its loading finds it. Throws
// ConfigError at file:line:col, naming `key`, if there is none.
std::filesystem::path find_profile(const std::filesystem::path& experiment_file,
                                   const std::string& key, const std::string& ref,
                                   const std::string& file, int line, int col);
// A layout named in an experiment, found as machines and stacks are.
// Throws ConfigError.
std::filesystem::path find_layout(const std::filesystem::path& experiment_file,
                                  const std::string& ref);

// Why `name` cannot name result files ("" if it can): 1 to 100 letters,
// digits, '-', '_' and '.', not starting with '.' or '-'. A name is data,
// never a path, so <dir>/<name>.csv stays in <dir>.
std::string name_problem(const std::string& name);

// What a stage's cycles are on the stack that runs, when that is not what
// the stage's name says: the stack's own word for the stage (its table's
// net::StageName); or, with a stack fitted to measured totals
// (stack.fitted_fixed_costs), the socket stage holds the fitted fixed cost
// of sending (all on the send system call's function) and the receive stage
// that of receiving (on the receive stage's first function,
// `fitted_receive`), not the socket layer's or the receiver's own work.
// {label, note}; both empty for a stage that is what its name says.
struct StageMeaning {
  std::string label;  // at most 10 characters, in place of the stage's name
  std::string note;   // what the cycles are, said beside them
};
StageMeaning stage_meaning(const net::FnTable& fns, bool fitted_fixed_costs, bool fitted_receive,
                           std::string_view stage);
// The same for an experiment.
StageMeaning stage_meaning(const Experiment& x, std::string_view stage);
// The same for the resolved configuration of a result JSON (its "config");
// a configuration of an older version (no such key) is read as not fitted.
StageMeaning stage_meaning(const nlohmann::json& config, std::string_view stage);
// The function table of the stack a result JSON's resolved configuration
// (its "config") ran: the first stack's for one that names none (an older
// version's), nullptr for a stack this build does not have.
const net::FnTable* fn_table_of(const nlohmann::json& config);

// The fully resolved configuration, every key with its value.
nlohmann::json to_json(const Experiment& x);

// The reference page of every key (Markdown), generated from the schema.
std::string reference_markdown();

// `machine` and `stack`: the keys that choose a profile by name or path
// (`--set stack=NAME`, a sweep's `stack: [A, B]`), beside the schema's keys.
bool is_profile_choice(const std::string& path);
// The name or path the experiment chose the profile by (machine_ref or
// stack_ref), empty when a map chose it.
const std::string& profile_ref(const Experiment& x, const std::string& key);

// What a sweep needs to know of a key: its type, and whether a value is
// valid for it (checked as the loader would, with the same messages). A
// profile choice is text (its name or path is checked when it is loaded).
enum class KeyType { integer, number, boolean, text, choice };
std::optional<KeyType> key_type(const std::string& path);
// The keys a misspelt `path` may have meant (for "did you mean").
std::string closest_key(const std::string& path);
// Throws ConfigError naming file:line:col and the key if `value` (YAML
// text, as for --set) is not valid for the key at `path`.
void check_value(const std::string& path, const std::string& value, const std::string& file,
                 int line, int col);

// The keys tagged in the schema as per-event or per-byte costs of the timing
// model (the prices `simloop calibrate` fits) that apply to the stack named
// `stack` (a net::FnTable name; the first stack of the list if empty), in
// schema order.
std::vector<std::string> cost_keys(std::string_view stack = {});
// Whether the key at `path` applies to the stack `x` runs (a key of the
// other stack's functions or options does not).
bool key_applies(const Experiment& x, const std::string& path);
// Every key whose path starts with `prefix` ("machine."), in schema order.
std::vector<std::string> keys_under(const std::string& prefix);
// A key's value in `x`, as to_json gives it. Throws ConfigError on an unknown key.
nlohmann::json get_value(const Experiment& x, const std::string& path);
// Sets a number key as the loader would (range checked). Throws ConfigError
// naming the key.
void set_number(Experiment& x, const std::string& path, double value);

// Marks a cost key undetermined, as `~` in a file does: priced 0, and a run
// that uses it says so. Throws ConfigError on a key that is not a cost.
void set_undetermined(Experiment& x, const std::string& path);

// The name of the stack the experiment runs (stack.kind).
inline std::string_view stack_of(const Experiment& x) {
  return x.stack.fns->stack();
}

// The path the experiment's sender takes: its destination and stack
// options, and what serves the host after each send.
inline workload::Path path_of(const Experiment& x) {
  return {.dest = x.workload.dest,
          .align = x.options.align,
          .copy = x.options.loop_copy,
          .service = x.workload.service,
          .sockaddr_misalign = x.options.sockaddr_misalign};
}

}  // namespace simloop::config
