// Definitions of lnx::Stack<P>: sendmmsg(2), message by message. Included
// from stack.h only.
//
// __sys_sendmmsg runs once per call: the descriptor's lookup and the loop's
// set-up. For each message the loop runs ___sys_sendmsg:
// copy_msghdr_from_user (the struct user_msghdr, its iovec, and the
// sockaddr through move_addr_to_kernel when msg_name is set), then
// ____sys_sendmsg, which hands the message to sock_sendmsg and so to
// udp_sendmsg as sendto() does, and puts msg_len back to the user.
#pragma once

namespace simloop::net::lnx {

template <class P>
int Stack<P>::sendmmsg_msg(int s, const void* buf, int len, uint32_t dst, uint16_t dport,
                           bool first) {
  // The call's own part runs before its first message only; its cost is
  // priced per call.
  if (first) FnScope<P> call(probe_, Fn::sys_sendmmsg);
  send_blocked_ = false;
  if (!valid(s)) {
    ++counters_.send_errors;
    return EBADF;
  }
  int err = 0;
  {
    FnScope<P> msg(probe_, Fn::sys_sendmsg);
    {
      FnScope<P> copy(probe_, Fn::copy_msghdr_from_user);
      if (dst != 0 || dport != 0) move_addr_to_kernel();
    }
    err = udp_sendmsg(socks_[s], buf, len, dst, dport);
  }
  if (err == 0)
    ++counters_.sent;
  else
    ++counters_.send_errors;
  return -err;
}

}  // namespace simloop::net::lnx
