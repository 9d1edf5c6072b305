# Guest job: the admin commands beyond the everyday ones, with nvme-cli. Identify advertises
# them; a short and an extended device self-test complete without error in the self-test log; a
# block erase sanitize zeroes what was written and an overwrite sanitize (one pass, a pattern,
# No-Deallocate) leaves the pattern, the sanitize log saying so; telemetry-log writes a file
# whose header and data area 1 are ours; a firmware commit, the sanitizes, the power-on and the
# driver's Set Features show in the persistent event log. Log bytes are checked raw (nvme get-log --raw-binary).
. "$GUEST_LIB"

dev=/dev/nvme0
ns=/dev/nvme0n1
# byte LID LEN OFFSET: one byte of a log page, decimal.
byte() {
	nvme get-log $dev --log-id="$1" --log-len="$2" --raw-binary 2> /dev/null |
		od -An -v -tu1 -j "$3" -N 1 | tr -d ' \n'
}
idfield() { nvme id-ctrl $dev -o json | tr -d ' \n' | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
advertised() {
	oacs=$(idfield oacs) lpa=$(idfield lpa) sanicap=$(idfield sanicap) edstt=$(idfield edstt)
	echo "oacs $oacs lpa $lpa sanicap $sanicap edstt $edstt"
	[ $((oacs & 0x10)) -ne 0 ] && [ $((lpa & 0x18)) -eq $((0x18)) ] &&
		[ $((sanicap & 7)) -eq 7 ] && [ "$edstt" -ge 1 ]
}
step "id-ctrl: OACS self-test, LPA telemetry + event log, SANICAP crypto erase, block erase, overwrite, EDSTT" advertised

dst_idle() { [ "$(byte 6 564 0)" = 0 ]; }
step "device-self-test short (all namespaces)" nvme device-self-test $dev -n 0xffffffff -s 1
step "the short test ends" wait_for 120 dst_idle
step "self-test-log" nvme self-test-log $dev
step "newest result: short (1h), completed without error (0h)" sh -c "[ \"\$(nvme get-log $dev --log-id=6 --log-len=564 --raw-binary | od -An -tu1 -j 4 -N 1 | tr -d ' ')\" = 16 ]"
step "device-self-test extended (namespace 1)" nvme device-self-test $dev -n 1 -s 2
step "the extended test ends" wait_for 300 dst_idle
step "newest result: extended (2h), no error, namespace 1 valid" sh -c "
	b=\$(nvme get-log $dev --log-id=6 --log-len=564 --raw-binary | od -An -v -tu1 -j 4 -N 16 | tr -s ' \n' ' ')
	echo \"result 0: \$b\"; set -- \$b; [ \"\$1\" = 32 ] && [ \$((\$3 & 1)) = 1 ] && [ \"\${13}\" = 1 ]"

# Sanitize: the log's SSTAT (byte 2, bits 2:0) and SCDW10 (byte 4).
san_done() { [ $(($(byte 0x81 512 2) & 7)) = 1 ] && [ $(($(byte 0x81 512 4) & 7)) = "$1" ]; }
step "write 1 MiB of text" sh -c "yes nvme-emu | head -c 1048576 > /tmp/p && dd if=/tmp/p of=$ns bs=1M count=1 oflag=direct"
step "sanitize block erase" nvme sanitize $dev -a 2
step "the sanitize completes" wait_for 120 san_done 2
step "sanitize-log" nvme sanitize-log $dev
step "the written MiB reads as zeroes" sh -c "dd if=$ns bs=1M count=1 iflag=direct 2> /dev/null | cmp -n 1048576 - /dev/zero"
step "write 1 MiB of text again" sh -c "dd if=/tmp/p of=$ns bs=1M count=1 oflag=direct"
step "sanitize crypto erase (SANICAP CES)" nvme sanitize $dev -a 4
step "the crypto erase completes" wait_for 120 san_done 4
step "the MiB reads as zeroes again" sh -c "dd if=$ns bs=1M count=1 iflag=direct 2> /dev/null | cmp -n 1048576 - /dev/zero"
step "sanitize overwrite, 1 pass, pattern 0x5a5aa5a5, no deallocate" nvme sanitize $dev -a 3 -n 1 -p 0x5a5aa5a5 -d
step "the overwrite completes" wait_for 300 san_done 3
step "sanitize-log: one overwrite pass completed" sh -c "nvme sanitize-log $dev; [ \$((\$(nvme get-log $dev --log-id=0x81 --log-len=512 --raw-binary | od -An -tu1 -j 2 -N 1 | tr -d ' ') >> 3)) = 1 ]"
step "first and last MiB hold the pattern" sh -c "
	for skip in 0 63; do
		w=\$(dd if=$ns bs=1M skip=\$skip count=1 iflag=direct 2> /dev/null | od -An -v -tx4 | tr -s ' \n' '\n' | grep -v '^\$' | sort -u)
		echo \"MiB \$skip: \$w\"; [ \"\$w\" = 5a5aa5a5 ] || exit 1
	done"

tel() {
	rm -f /tmp/tel.bin
	nvme telemetry-log $dev --output-file=/tmp/tel.bin --host-generate=1 --data-area=2 || return 1
	set -- $(od -An -v -tu1 -N 12 /tmp/tel.bin)
	size=$(stat -c %s /tmp/tel.bin)
	echo "lid $1 oui $8 $7 $6 da1 $(($9 + ${10} * 256)) da2 $((${11} + ${12} * 256)) size $size"
	[ "$1" = 7 ] && [ "$8" = 2 ] && [ "$7" = 78 ] && [ "$6" = 88 ] &&
		[ "$size" -ge $(((1 + ${11} + ${12} * 256) * 512)) ] &&
		[ "$(dd if=/tmp/tel.bin bs=1 skip=512 count=8 2> /dev/null)" = NVMEEMU1 ]
}
step "telemetry-log: header (LID 07h, OUI 02-4E-58, last blocks), data area 1 ours" tel

fw() {
	{ printf 'EXTFW2.0'; head -c 4088 /dev/zero; } > /tmp/fw.bin
	nvme fw-download $dev -f /tmp/fw.bin && nvme fw-commit $dev -s 2 -a 1
}
step "fw-download + fw-commit to slot 2 (next reset)" fw
pel() {
	nvme persistent-event-log $dev --action=1 || return 1
	nvme persistent-event-log $dev --action=0 > /tmp/pel.txt 2>&1 || { cat /tmp/pel.txt; return 1; }
	cat /tmp/pel.txt
	grep -qi "sanitize start" /tmp/pel.txt && grep -qi "sanitize completion" /tmp/pel.txt &&
		grep -qi "firmware commit" /tmp/pel.txt && grep -qi "power.on or reset" /tmp/pel.txt &&
		grep -qi "set feature" /tmp/pel.txt
}
step "persistent-event-log: power-on, firmware commit, sanitize start and completion, set feature (the driver's)" pel
step "persistent-event-log release context" nvme persistent-event-log $dev --action=2
guest_finish
