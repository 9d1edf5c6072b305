#!/usr/bin/env bash
# Test "hosts" on this machine: network namespaces joined by a bridge, each with its own address,
# as separate servers on one LAN would be (traffic stays on this machine). Sourced by tests.
#
#   netns_hosts_up TAG N   a bridge nvb<TAG> with address 10.<subnet>.1/24 in this namespace and N
#                          namespaces nv<TAG>h1..hN with addresses .2 .. .N+1 (loopback up too);
#                          sets NETNS_HOST_ADDR (the bridge's address, where servers for the hosts
#                          listen) and NETNS_HOSTS (the namespaces' names). 1 when the machine
#                          cannot make them (no iproute2, no permission), with the reason on stderr.
#   netns_hosts_down       removes what netns_hosts_up made (also after a partial set-up).
#   netns_run H CMD...     runs CMD in host H's namespace (1..N), exec'd: $! of a background
#                          netns_run is CMD's pid.

_netns_tag=
_netns_n=0

netns_hosts_up() {
	local tag=$1 n=$2 subnet i ns br
	_netns_tag=$tag
	_netns_n=$n
	command -v ip > /dev/null || { echo "iproute2 (ip) is not installed" >&2; return 1; }
	# A subnet of 10.0.0.0/8 from the tag, so two tests running at once do not share one.
	subnet=$((16 + $(printf '%s' "$tag" | cksum | cut -d' ' -f1) % 200))
	br=nvb$tag
	ip link add "$br" type bridge 2> /dev/null || { echo "cannot create a bridge (ip link add type bridge)" >&2; return 1; }
	ip addr add "10.$subnet.0.1/24" dev "$br" && ip link set "$br" up || return 1
	NETNS_HOST_ADDR=10.$subnet.0.1
	NETNS_HOSTS=
	for i in $(seq "$n"); do
		ns=nv${tag}h$i
		ip netns add "$ns" || { echo "cannot create network namespace $ns" >&2; return 1; }
		ip link add "nv${tag}v$i" type veth peer name eth0 netns "$ns" || return 1
		ip link set "nv${tag}v$i" master "$br" up || return 1
		ip -n "$ns" addr add "10.$subnet.0.$((i + 1))/24" dev eth0 || return 1
		ip -n "$ns" link set eth0 up && ip -n "$ns" link set lo up || return 1
		NETNS_HOSTS="$NETNS_HOSTS $ns"
	done
	NETNS_HOSTS=${NETNS_HOSTS# }
}

netns_hosts_down() {
	local i
	[ -n "$_netns_tag" ] || return 0
	for i in $(seq "$_netns_n"); do
		ip netns del "nv${_netns_tag}h$i" 2> /dev/null
		ip link del "nv${_netns_tag}v$i" 2> /dev/null
	done
	ip link del "nvb$_netns_tag" 2> /dev/null
	return 0
}

netns_run() {
	local h=$1
	shift
	exec ip netns exec "nv${_netns_tag}h$h" "$@"
}
