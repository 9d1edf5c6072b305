# Guest job (second boot of test-admin-ext.sh, after the daemon restarted on its event log file):
# the persistent event log still holds the first boot's firmware commit, sanitizes and Set
# Feature events, and its header counts a second power cycle (PCC, bytes 51:44).
. "$GUEST_LIB"

dev=/dev/nvme0
pel_again() {
	nvme persistent-event-log $dev --action=1 || return 1
	nvme persistent-event-log $dev --action=0 > /tmp/pel.txt 2>&1 || { cat /tmp/pel.txt; return 1; }
	cat /tmp/pel.txt
	grep -qi "sanitize start" /tmp/pel.txt && grep -qi "firmware commit" /tmp/pel.txt &&
		grep -qi "set feature" /tmp/pel.txt
}
step "persistent-event-log after the restart: the first boot's events" pel_again
pcc() {
	p=$(nvme get-log $dev --log-id=13 --lsp=1 --log-len=512 --raw-binary | od -An -tu1 -j 44 -N 1 | tr -d ' ')
	echo "power cycle count $p"
	[ "$p" = 2 ]
}
step "header: power cycle count 2" pcc
step "persistent-event-log release context" nvme persistent-event-log $dev --action=2
guest_finish
