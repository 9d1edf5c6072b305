#!/usr/bin/env python3
# Stopgap for hosts that cannot build QEMU from source: copies Debian's qemu-system-x86_64 11.1.3 with the one call that aborts vfio-user-pci finalize (memory_region_del_subregion of the MSI-X PBA overlay) turned into a NOP.
#
# Usage: binary-fix.py QEMU_IN QEMU_OUT   (run by qemu-configs/build-qemu.sh --binary)
#
# Why a NOP is enough: by the time vfio_user_instance_finalize() runs, QOM has
# released the device's child properties and finalizing the BAR region has
# already taken the overlay out (see 0001-*.patch). Skipping the delete is
# the fix proposed upstream ("vfio-user: do not remove PBA region"); the source
# patch goes further and detaches the overlay at unrealize.
#
# The call site is found, not hard-coded: the binary exports its symbols (it
# is built for loadable modules), so memory_region_del_subregion and
# vfio_pci_put_device are in .dynsym; the "vfio-user-pci" TypeInfo is found
# through its R_X86_64_RELATIVE relocations (name at offset 0, the
# instance_finalize pointer at offset 48); in that function, the expected
# shape is exactly one call to memory_region_del_subregion followed by the
# call to vfio_pci_put_device. Anything else (another QEMU version or build)
# is refused and nothing is written.
import struct
import sys

NOP5 = b"\x0f\x1f\x44\x00\x00"
TYPEINFO_FINALIZE = 48  # name, parent, instance_size, _align, _init, _post_init, _finalize
R_X86_64_RELATIVE = 8


def fail(msg):
    sys.exit("binary-fix: " + msg)


def cstr(data, at):
    return data[at:data.index(b"\0", at)].decode()


def fix(data):
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1 or \
            struct.unpack_from("<H", data, 18)[0] != 62:
        fail("not an x86-64 ELF64 file")
    phoff, shoff = struct.unpack_from("<QQ", data, 32)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 54)
    loads = []
    for i in range(phnum):
        p_type, _, p_off, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data,
                                                                   phoff + i * phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_off, p_filesz))

    def file_off(va):
        for v, o, n in loads:
            if v <= va < v + n:
                return va - v + o
        fail("address %#x is not in a loaded segment" % va)

    def vaddr(fo):
        for v, o, n in loads:
            if o <= fo < o + n:
                return fo - o + v
        return None

    hdrs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
            for i in range(shnum)]
    secs = {cstr(data, hdrs[shstrndx][4] + h[0]): h for h in hdrs}
    for s in (".dynsym", ".dynstr", ".rela.dyn"):
        if s not in secs:
            fail("no %s section" % s)
    dynsym, dynstr, rela = secs[".dynsym"], secs[".dynstr"], secs[".rela.dyn"]
    syms = {}
    for i in range(dynsym[5] // 24):
        st_name, _, _, _, st_value, _ = struct.unpack_from("<IBBHQQ", data, dynsym[4] + i * 24)
        syms[cstr(data, dynstr[4] + st_name)] = st_value
    try:
        del_sub = syms["memory_region_del_subregion"]
        put_dev = syms["vfio_pci_put_device"]
    except KeyError as e:
        fail("symbol %s not exported" % e)
    relative = {}
    for i in range(rela[5] // 24):
        r_off, r_info, r_add = struct.unpack_from("<QQq", data, rela[4] + i * 24)
        if r_info & 0xffffffff == R_X86_64_RELATIVE:
            relative[r_off] = r_add
    names = set()
    at = data.find(b"\0vfio-user-pci\0")
    while at >= 0:
        va = vaddr(at + 1)
        if va is not None:
            names.add(va)
        at = data.find(b"\0vfio-user-pci\0", at + 1)
    fins = [relative[o + TYPEINFO_FINALIZE] for o, a in relative.items()
            if a in names and o + TYPEINFO_FINALIZE in relative]
    if len(fins) != 1:
        fail("found %d vfio-user-pci TypeInfo candidates, expected 1" % len(fins))
    fin = fins[0]
    start = file_off(fin)
    calls = []
    # The function is short; scan until its call to vfio_pci_put_device.
    for i in range(start, start + 512):
        if data[i] != 0xe8:
            continue
        target = fin + (i - start) + 5 + struct.unpack_from("<i", data, i + 1)[0]
        if target in (del_sub, put_dev):
            calls.append((i, target))
            if target == put_dev:
                break
    dels = [i for i, t in calls if t == del_sub]
    if not calls or calls[-1][1] != put_dev or len(dels) != 1:
        fail("vfio_user_instance_finalize at %#x has not the expected shape" % fin)
    data[dels[0]:dels[0] + 5] = NOP5
    return fin, dels[0]


def main():
    if len(sys.argv) != 3:
        fail("usage: binary-fix.py QEMU_IN QEMU_OUT")
    with open(sys.argv[1], "rb") as f:
        data = bytearray(f.read())
    fin, at = fix(data)
    with open(sys.argv[2], "wb") as f:
        f.write(data)
    print("binary-fix: vfio_user_instance_finalize at %#x: call at file offset %#x "
          "to memory_region_del_subregion replaced by a NOP" % (fin, at), file=sys.stderr)


if __name__ == "__main__":
    main()
