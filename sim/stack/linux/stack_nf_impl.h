// Definitions of lnx::Stack<P>: the LOCAL_OUT hook (netfilter.h). Included
// from stack.h only.
#pragma once

namespace simloop::net::lnx {

// nf_hook_slow: the hook's one entry (the table's base chain) and its
// verdict. A drop frees the packet (kfree_skb with NETFILTER_DROP) and is
// the sender's EPERM, as NF_DROP's default error is; 1 lets it go on.
template <class P>
int Stack<P>::nf_hook_slow(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::nf_hook_slow);
  if (nft_do_chain(skb) == NftVerdict::next) return 1;
  ++nft_.dropped;
  free_skb(skb, core::SkbDropReason::kNetfilterDrop);
  return -EPERM;
}

// nft_do_chain (by way of nft_do_chain_ipv4): every rule in turn until one
// decides.
template <class P>
NftVerdict Stack<P>::nft_do_chain(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::nft_do_chain);
  const uint8_t* nh = core::skb_network_header(skb);
  const auto avail = static_cast<unsigned>(core::skb_tail_pointer(skb) - nh);
  for (NftRule& r : nft_.rules)
    if (nft_rule_eval(r, skb, nh, avail) == NftVerdict::drop) return NftVerdict::drop;
  return NftVerdict::next;  // policy accept
}

// One rule's expressions (inlined into nft_do_chain in the kernel): a call
// of its own here, so that a profile prices it per rule.
template <class P>
NftVerdict Stack<P>::nft_rule_eval(NftRule& r, const core::SkBuff* skb, const uint8_t* nh,
                                   unsigned avail) {
  FnScope<P> scope(probe_, Fn::nft_rule_eval);
  ++nft_.evaluations;
  if (!nft_rule_matches(r, nh, avail)) return NftVerdict::next;
  ++r.packets;
  r.bytes += skb->len;
  return r.verdict;
}

}  // namespace simloop::net::lnx
