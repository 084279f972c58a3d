#!/bin/sh
# a2a-egress boundary: in this network namespace, only the gateway's UID may open outbound
# connections, except to loopback and to the operator's allowlist (the orchestrator's other
# dependencies: DNS, its model provider, its database). So agent traffic cannot skip the gateway:
# an orchestrator that calls an agent directly gets "connection refused", and the refusal is
# counted.
#
# It writes one nftables table of its own, `table inet a2a_egress` (IPv4 and IPv6), with one
# chain on the output hook:
#   - packets to 127.0.0.0/8 and ::1 pass (the gateway is reached there; the pod's or host's own
#     non-loopback addresses are NOT loopback here: they count as outside);
#   - packets of connections already allowed (ct state established,related) pass, and so do
#     answers to connections other hosts opened to this namespace;
#   - IPv6 neighbour discovery and MLD pass (the kernel sends them, no process can fill them);
#   - sockets of A2A_EGRESS_GATEWAY_UID (and of A2A_EGRESS_EXEMPT_UIDS) pass;
#   - every allowlist entry passes (one rule, with its own counter);
#   - everything else is counted in the named counter `blocked` and rejected: TCP with a reset
#     (connect() fails at once with ECONNREFUSED), the rest with ICMP admin-prohibited (a UDP
#     send fails with EPERM).
# Re-running replaces the table in one atomic transaction (nothing else in the ruleset is
# touched); a refused run leaves the previous table as it was.
#
# Parameters (environment):
#   A2A_EGRESS_GATEWAY_UID         required: the numeric UID the gateway runs as (Kubernetes:
#                                  the gateway container's runAsUser; systemd: `id -u a2a-egress`)
#   A2A_EGRESS_BOUNDARY_ALLOWLIST  the allowlist file (default /etc/a2a-egress/boundary.allow);
#                                  it must exist (an empty one allows loopback only)
#   A2A_EGRESS_EXEMPT_UIDS         optional, space-separated UIDs that also go out freely. Only
#                                  for a shared host whose system daemons need the network
#                                  (time sync, package updates); never the orchestrator's UID.
#   NFT                            the nft binary (default: nft on PATH)
#
# The allowlist: one entry a line, `PROTO ADDRESS[/PREFIX] PORT[-PORT]`, `#` starts a comment
# (the comment is kept on the rule, shown by `nft list table inet a2a_egress`):
#   udp 10.96.0.10/32     53     # cluster DNS
#   tcp 2001:db8:1::/48   443    # model provider over IPv6
#   tcp 10.20.0.0/16      5432   # the database
# PROTO is tcp or udp; an address without a prefix is one host; a /0 is refused (it would let
# the orchestrator reach every address on that port, agents included). Never list an agent's
# addresses here: the orchestrator could then reach that agent without the gateway.
#
# Usage:
#   a2a-egress-boundary            install (or replace) the table; needs CAP_NET_ADMIN only
#   a2a-egress-boundary --print    print the nft rule set it would install; needs nothing
#   a2a-egress-boundary --check    let nft check that rule set without installing it
#   a2a-egress-boundary --remove   delete the table (the namespace is unrestricted again)
# Exit codes: 0 done, 64 bad parameters or usage, 65 a bad allowlist line, 66 the allowlist
# file is missing, anything else is nft's own (its message says why).
#
# See what it does: `nft list table inet a2a_egress` (the `blocked` counter counts refused
# packets; `nft -j list counter inet a2a_egress blocked` for a script).
# No globbing: allowlist fields are split on blanks, and a `*` there must stay a `*`.
set -euf

TABLE="inet a2a_egress"
NFT="${NFT:-nft}"
ALLOWLIST="${A2A_EGRESS_BOUNDARY_ALLOWLIST:-/etc/a2a-egress/boundary.allow}"

die() {
    code="$1"
    shift
    echo "a2a-egress-boundary: $*" >&2
    exit "$code"
}

# is_uint VALUE: a non-empty run of digits.
is_uint() {
    case "$1" in
        '' | *[!0-9]*) return 1 ;;
    esac
}

# check_uid NAME VALUE
check_uid() {
    is_uint "$2" || die 64 "$1 must be a numeric UID, got '$2'"
    [ "${#2}" -le 10 ] && [ "$2" -le 4294967294 ] || die 64 "$1: $2 is not a UID"
}

# check_port WHERE VALUE: a port (1-65535) or a range LOW-HIGH.
check_port() {
    case "$2" in
        *-*) low="${2%%-*}" high="${2#*-}" ;;
        *) low="$2" high="$2" ;;
    esac
    for p in "$low" "$high"; do
        is_uint "$p" && [ "${#p}" -le 5 ] && [ "$p" -ge 1 ] && [ "$p" -le 65535 ] ||
            die 65 "$1: '$2' is not a port (1-65535) or a range of ports"
    done
    [ "$low" -le "$high" ] || die 65 "$1: the range '$2' is backwards"
}

# check_ipv4 WHERE ADDRESS: four dot-separated numbers of 0-255.
check_ipv4() {
    rest="$2."
    count=0
    while [ -n "$rest" ]; do
        octet="${rest%%.*}"
        rest="${rest#*.}"
        count=$((count + 1))
        is_uint "$octet" && [ "${#octet}" -le 3 ] && [ "$octet" -le 255 ] ||
            die 65 "$1: '$2' is not an IPv4 address"
    done
    [ "$count" -eq 4 ] || die 65 "$1: '$2' is not an IPv4 address"
}

# check_address WHERE VALUE: prints the nft family keyword (ip or ip6) of an address or prefix.
# The shape is checked here (so --print needs no nft); nft checks an IPv6 address itself.
check_address() {
    addr="${2%/*}"
    prefix=""
    case "$2" in */*) prefix="${2#*/}" ;; esac
    case "$addr" in
        *:*)
            family=ip6 max=128
            case "$addr" in *[!0-9A-Fa-f:.]*) die 65 "$1: '$2' is not an IPv6 address" ;; esac
            ;;
        *)
            family=ip max=32
            check_ipv4 "$1" "$addr"
            ;;
    esac
    case "$2" in
        */*)
            is_uint "$prefix" && [ "${#prefix}" -le 3 ] && [ "$prefix" -le "$max" ] ||
                die 65 "$1: '/$prefix' is not a prefix length (1-$max)"
            [ "$prefix" -gt 0 ] ||
                die 65 "$1: '$2' allows every address; the orchestrator could reach the agents directly"
            ;;
    esac
    echo "$family"
}

# allow_rules: one nft rule per allowlist entry, in file order.
allow_rules() {
    n=0
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        where="$ALLOWLIST:$n"
        note=""
        case "$line" in *'#'*) note="${line#*#}" ;; esac
        # A CRLF file reads like an LF one.
        entry="$(printf '%s' "${line%%#*}" | tr -d '\r')"
        # shellcheck disable=SC2086 # split the entry into its fields on purpose
        set -- $entry
        [ "$#" -eq 0 ] && continue
        [ "$#" -eq 3 ] || die 65 "$where: want 'PROTO ADDRESS[/PREFIX] PORT[-PORT]', got '$entry'"
        case "$1" in
            tcp | udp) ;;
            *) die 65 "$where: the protocol must be tcp or udp, got '$1'" ;;
        esac
        # Explicit `|| exit`: errexit does not reach into $(...) in every shell (bash outside
        # POSIX mode), and a refused line must never become a rule set without it.
        family="$(check_address "$where" "$2")" || exit $?
        check_port "$where" "$3"
        # The rule's comment: the line number and the entry's own comment, reduced to characters
        # that cannot end nft's quoted string, and to nft's 128-byte comment limit.
        note="$(printf '%s' "$note" | tr -c 'A-Za-z0-9 ._:/()+,=@-' ' ' | sed 's/  */ /g; s/^ //; s/ $//' | cut -c1-100)"
        printf '\t\t%s daddr %s %s dport %s counter accept comment "allowlist line %s%s"\n' \
            "$family" "$2" "$1" "$3" "$n" "${note:+: $note}"
    done <"$ALLOWLIST"
}

# ruleset: the whole transaction. The leading `table` + `delete table` pair makes the run
# idempotent on nft 1.0.6 (Debian 12), which has no `destroy table`: the first creates the table
# when it is absent, so the delete always finds one, and all three apply together or not at all.
ruleset() {
    rules="$(allow_rules)" || exit $?
    printf '%s\n' \
        "table $TABLE" \
        "delete table $TABLE" \
        "table $TABLE {" \
        "	counter blocked {" \
        "		comment \"new outbound packets refused: not the gateway, not loopback, not allowlisted\"" \
        "	}" \
        "" \
        "	chain output {" \
        "		type filter hook output priority filter; policy accept;" \
        "		ip daddr 127.0.0.0/8 accept" \
        "		ip6 daddr ::1 accept" \
        "		ct state established,related accept" \
        "		icmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert, mld-listener-report, mld2-listener-report } accept" \
        "		meta skuid $GATEWAY_UID counter accept comment \"the gateway\""
    for uid in $EXEMPT_UIDS; do
        printf '\t\tmeta skuid %s counter accept comment "exempt (A2A_EGRESS_EXEMPT_UIDS)"\n' "$uid"
    done
    [ -z "$rules" ] || printf '%s\n' "$rules"
    printf '%s\n' \
        "		meta l4proto tcp counter name blocked reject with tcp reset" \
        "		counter name blocked reject with icmpx admin-prohibited" \
        "	}" \
        "}"
}

mode="${1:-apply}"
case "$mode" in
    apply | --print | --check) ;;
    --remove)
        printf 'table %s\ndelete table %s\n' "$TABLE" "$TABLE" | "$NFT" -f -
        echo "a2a-egress-boundary: table $TABLE removed"
        exit 0
        ;;
    *) die 64 "usage: $0 [--print | --check | --remove]" ;;
esac
[ "$#" -le 1 ] || die 64 "usage: $0 [--print | --check | --remove]"

GATEWAY_UID="${A2A_EGRESS_GATEWAY_UID:-}"
[ -n "$GATEWAY_UID" ] || die 64 "A2A_EGRESS_GATEWAY_UID is not set (the UID the gateway runs as)"
check_uid A2A_EGRESS_GATEWAY_UID "$GATEWAY_UID"
EXEMPT_UIDS="${A2A_EGRESS_EXEMPT_UIDS:-}"
for uid in $EXEMPT_UIDS; do
    check_uid A2A_EGRESS_EXEMPT_UIDS "$uid"
done
[ -f "$ALLOWLIST" ] || die 66 "the allowlist $ALLOWLIST does not exist (A2A_EGRESS_BOUNDARY_ALLOWLIST)"

# Generated once, so a bad line stops the run before nft is called.
RULESET="$(ruleset)" || exit $?
case "$mode" in
    --print) printf '%s\n' "$RULESET" ;;
    --check) printf '%s\n' "$RULESET" | "$NFT" -c -f - ;;
    apply)
        printf '%s\n' "$RULESET" | "$NFT" -f -
        entries="$(printf '%s\n' "$RULESET" | grep -c 'comment "allowlist line' || true)"
        echo "a2a-egress-boundary: table $TABLE installed: gateway uid $GATEWAY_UID, $entries allowlist entries"
        ;;
esac
