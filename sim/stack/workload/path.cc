#include "sim/stack/workload/path.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "sim/support/text.h"

namespace simloop::workload {

namespace {

size_t field_index(std::string_view field) {
  const auto it = std::find(Path::kFields.begin(), Path::kFields.end(), field);
  if (it == Path::kFields.end())
    throw std::logic_error(fmt::format("a path has no field '{}'", field));
  return static_cast<size_t>(it - Path::kFields.begin());
}

// What an error calls each field, in kFields order.
constexpr std::array<std::string_view, 6> kWhat = {"destination", "alignment policy",
                                                   "loop copy",   "sockaddr misalignment",
                                                   "service",     "buffer misalignment"};

std::vector<std::string> numbers(int max) {
  std::vector<std::string> v;
  for (int i = 0; i <= max; ++i) v.push_back(std::to_string(i));
  return v;
}

}  // namespace

std::vector<std::string> Path::names(std::string_view field) {
  switch (field_index(field)) {
    case 0:
      return dest_names();
    case 1:
      return net::align_policy_names();
    case 2:
      return net::loop_copy_names();
    case 3:
      return numbers(kMaxSockaddrMisalign);
    case 4:
      return {std::string(service_name(Service::drained)),
              std::string(service_name(Service::send_only))};
    default:
      return numbers(kMaxBufferMisalign);
  }
}

std::string Path::problem(std::string_view field, std::string_view value) {
  const auto all = names(field);
  if (std::find(all.begin(), all.end(), value) != all.end()) return {};
  const std::string_view what = kWhat[field_index(field)];
  if (field == "sockaddr_misalign" || field == "buffer_misalign")
    return fmt::format("{} '{}': expected a whole number of bytes, 0 to {}", what, value,
                       all.back());
  std::string msg =
      fmt::format("unknown {} '{}': expected one of {}", what, value, fmt::join(all, ", "));
  if (const auto near = support::closest(value, all, 2); !near.empty())
    msg += fmt::format("; did you mean '{}'?", near);
  return msg;
}

void Path::set(std::string_view field, std::string_view value) {
  if (auto why = problem(field, value); !why.empty()) throw PathError(why);
  switch (field_index(field)) {
    case 0:
      dest = *parse_dest(value);
      break;
    case 1:
      align = *net::parse_align_policy(value);
      break;
    case 2:
      copy = *net::parse_loop_copy(value);
      break;
    case 3:
      sockaddr_misalign = value[0] - '0';
      break;
    case 4:
      service = value == service_name(Service::send_only) ? Service::send_only : Service::drained;
      break;
    default:
      buffer_misalign = value[0] - '0';
      break;
  }
}

std::string Path::get(std::string_view field) const {
  switch (field_index(field)) {
    case 0:
      return std::string(dest_name(dest));
    case 1:
      return std::string(net::align_policy_name(align));
    case 2:
      return std::string(net::loop_copy_name(copy));
    case 3:
      return std::to_string(sockaddr_misalign);
    case 4:
      return std::string(service_name(service));
    default:
      return std::to_string(buffer_misalign);
  }
}

std::string Path::option(std::string_view field) {
  std::string flag = "--" + std::string(kFields[field_index(field)]);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

Path Path::parse(std::string_view spec) {
  std::vector<std::string_view> f;
  for (size_t start = 0;;) {
    const size_t slash = spec.find('/', start);
    f.push_back(spec.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (f.size() < 3 || f.size() > kFields.size())
    throw PathError(fmt::format("expected {}, {} fields", kSpecFormat,
                                f.size() < 3 ? "at least 3" : "at most 6"));
  Path p;
  for (size_t i = 0; i < f.size(); ++i) p.set(kFields[i], f[i]);
  return p;
}

std::string Path::spec() const {
  std::vector<std::string> f;
  for (auto field : kFields) f.push_back(get(field));
  return fmt::format("{}", fmt::join(f, "/"));
}

int Path::max_payload(const net::bsd::StackOptions& so) const {
  const int mtu = dest == Dest::loopback ? so.loop_mtu : so.ether_mtu;
  return std::min({kMaxPayload, so.so_sndbuf, mtu - net::kUdpIpHdrLen});
}

std::string Path::payload_problem(int payload, const net::bsd::StackOptions& so) const {
  if (payload < 0 || payload > kMaxPayload)
    return fmt::format("expected 0 to {} bytes", kMaxPayload);
  if (payload > so.so_sndbuf)
    return fmt::format("{} bytes exceed the socket's send limit ({})", payload, so.so_sndbuf);
  if (payload > max_payload(so))
    return fmt::format(
        "{} bytes + {} bytes of headers exceed the MTU of {} ({}) on the {} path; there is no IP "
        "fragmentation",
        payload, net::kUdpIpHdrLen, dest == Dest::loopback ? "lo0" : "em0",
        dest == Dest::loopback ? so.loop_mtu : so.ether_mtu, dest_name(dest));
  return {};
}

net::KeyProblem ether_problem(int payload, int mtu) {
  if (payload + net::kUdpIpHdrLen <= mtu) return {};
  return {
      "workload.payload",
      fmt::format("{} bytes + 28 bytes of headers exceed options.ether_mtu ({}); there is no IP "
                  "fragmentation",
                  payload, mtu)};
}

}  // namespace simloop::workload
