#!/usr/bin/env python3
"""mdfcheck: a second, strict reader of ASAM MDF 4 files, for beamconnect's tests.

Written from the standard's block layout (ASAM MDF 4.1), in another language
than beamconnect's writer and reader, sharing no code with them. It checks
what the standard requires of every block it meets (ids, lengths, link
counts, 8-byte alignment, zero-terminated texts, well-formed XML in MD
blocks, the file history's tool elements, value-to-text conversions, data
lists whose offsets add up, cycle counts that match the data, events whose
ranges, scopes and attachments point at blocks of the right kind, MD5 sums
of attachments) and prints what a reader sees in the same lines as
mdflib-dump: VERSION, per data group and channel group every channel (name,
unit, type, sample count, CRC-32 of all values, first and last 3 values) and
the events. Exit 0 ok, 1 a rule of the standard broken (on stderr), 2 usage.

Usage: mdfcheck.py FILE.mf4
"""
import hashlib
import struct
import sys
import xml.etree.ElementTree as ET
import zlib


class Broken(Exception):
    pass


def fail(at, msg):
    raise Broken("block at 0x%x: %s" % (at, msg) if at is not None else msg)


class MDF:
    def __init__(self, data):
        self.d = data
        self.size = len(data)

    def block(self, at, ids, min_links=0, min_data=0):
        if isinstance(ids, str):
            ids = (ids,)
        if at <= 0 or at % 8 or at + 24 > self.size:
            fail(at, "link to a %s block outside the file or not 8-byte aligned" % "/".join(ids))
        bid = self.d[at:at + 4].decode("latin-1")
        if bid[:2] != "##" or bid[2:] not in ids:
            fail(at, "expected a %s block, found %r" % ("/".join(ids), bid))
        reserved, length, nlinks = struct.unpack_from("<4sQQ", self.d, at + 4)
        if reserved != b"\0\0\0\0":
            fail(at, "reserved bytes of the block header are not zero")
        if at + length > self.size:
            fail(at, "%s block of %d bytes ends past the end of the file" % (bid, length))
        if nlinks < min_links or length < 24 + 8 * nlinks + min_data:
            fail(at, "%s block of %d bytes, %d links: expected at least %d links and %d bytes of data"
                 % (bid, length, nlinks, min_links, min_data))
        links = list(struct.unpack_from("<%dQ" % nlinks, self.d, at + 24))
        data = self.d[at + 24 + 8 * nlinks:at + length]
        return bid[2:], links, data

    def text(self, at, allow=("TX", "MD")):
        if at == 0:
            return ""
        kind, links, data = self.block(at, allow)
        if links:
            fail(at, "a %s block has no links" % kind)
        if b"\0" not in data:
            fail(at, "%s block without its terminating zero" % kind)
        s = data[:data.index(b"\0")].decode("utf-8")
        if kind == "MD":
            try:
                ET.fromstring(s)
            except ET.ParseError as e:
                fail(at, "MD block is not well-formed XML: %s" % e)
        return s

    def chain(self, first, what):
        seen = set()
        at = first
        while at:
            if at in seen:
                fail(at, "the %s list loops" % what)
            seen.add(at)
            yield at
            at = struct.unpack_from("<Q", self.d, at + 24)[0]


def typename(dt, bits):
    names = {0: "uint", 1: "uint%dbe", 2: "int", 3: "int%dbe", 4: "float", 5: "float%dbe"}
    if dt in (0, 2, 4):
        return names[dt] + str(bits)
    if dt in (1, 3, 5):
        return names[dt] % bits
    return {6: "str-latin1", 7: "str-utf8", 8: "str-utf16le", 9: "str-utf16be", 10: "bytes"}.get(dt, "dt%d" % dt)


CTYPES = {0: "fixed", 1: "vlsd", 2: "master", 3: "virtual-master", 4: "sync", 5: "maxlength", 6: "virtual-data"}
SYNCS = {0: "none", 1: "time", 2: "angle", 3: "distance", 4: "index"}


def _q(s):
    out = ['"']
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append("\\x%02x" % ord(c))
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def fmt(v):
    return "%.17g" % v


class Channel:
    pass


def read_channel(m, at, record_size):
    kind, links, d = m.block(at, "CN", 8, 72)
    ch = Channel()
    ch.at = at
    ch.ctype, ch.sync, ch.dt, ch.bitoff = d[0], d[1], d[2], d[3]
    ch.off, ch.bits, ch.flags = struct.unpack_from("<III", d, 4)
    if links[2] == 0:
        fail(at, "a channel without a name")
    ch.name = m.text(links[2], ("TX",))
    ch.unit = m.text(links[6])
    ch.comment = m.text(links[7])
    if ch.bitoff > 7:
        fail(at, "cn_bit_offset %d: expected 0 to 7" % ch.bitoff)
    if ch.ctype in (0, 2) and (ch.off * 8 + ch.bitoff + ch.bits) > record_size * 8:
        fail(at, "channel %r reaches past its record of %d bytes" % (ch.name, record_size))
    if ch.dt in (4, 5) and ch.bits not in (16, 32, 64):
        fail(at, "channel %r: a float of %d bits" % (ch.name, ch.bits))
    ch.cc = None
    if links[4]:
        ch.cc = read_conversion(m, links[4])
    return ch, links[0]


def read_conversion(m, at):
    kind, links, d = m.block(at, "CC", 4, 24)
    ctype, prec, flags, nref, nval = struct.unpack_from("<BBHHH", d, 0)
    if len(links) != 4 + nref:
        fail(at, "cc_ref_count %d with %d links (expected 4 + the references)" % (nref, len(links)))
    if len(d) < 24 + 8 * nval:
        fail(at, "cc_val_count %d in %d bytes of data" % (nval, len(d)))
    vals = struct.unpack_from("<%dd" % nval, d, 24)
    cc = {"type": ctype, "vals": vals}
    if ctype == 7:
        if nref != nval + 1:
            fail(at, "value-to-text conversion of %d values with %d references: expected one more (the default)" % (nval, nref))
        texts = []
        for ref in links[4:]:
            if ref == 0:
                texts.append(None)
            else:
                kind2 = m.d[ref + 2:ref + 4].decode("latin-1")
                texts.append(m.text(ref, ("TX",)) if kind2 == "TX" else None)
        cc["texts"] = texts
    elif ctype == 1:
        if nval != 2:
            fail(at, "linear conversion with %d values" % nval)
    elif ctype != 0:
        cc["unsupported"] = True
    return cc


def values_of(m, dg_data, record_size, cycles, unfinalized, at):
    """The group's data bytes, walking DT and DL blocks, with checks."""
    chunks = []
    if dg_data == 0:
        total = 0
    else:
        kind = m.d[dg_data + 2:dg_data + 4].decode("latin-1")
        if kind == "DT":
            _, links, data = m.block(dg_data, "DT")
            chunks.append(data)
        elif kind == "DL":
            offset = 0
            for dl in m.chain(dg_data, "DL"):
                _, links, d = m.block(dl, "DL", 1, 8)
                flags, count = d[0], struct.unpack_from("<I", d, 4)[0]
                if d[1:4] != b"\0\0\0":
                    fail(dl, "reserved bytes of a DL block are not zero")
                if count != len(links) - 1:
                    fail(dl, "dl_count %d with %d data links" % (count, len(links) - 1))
                if flags & 1:
                    equal = struct.unpack_from("<Q", d, 8)[0]
                    offsets = None
                else:
                    if len(d) < 8 + 8 * count:
                        fail(dl, "DL block without its %d offsets" % count)
                    offsets = struct.unpack_from("<%dQ" % count, d, 8)
                for i, link in enumerate(links[1:]):
                    if link == 0:
                        fail(dl, "a DL block's data link %d is empty" % i)
                    _, l2, data = m.block(link, "DT")
                    if offsets is not None and offsets[i] != offset:
                        fail(dl, "dl_offset[%d] is %d: the data before it are %d bytes" % (i, offsets[i], offset))
                    chunks.append(data)
                    offset += len(data)
        else:
            fail(dg_data, "expected a DT or DL block for the data, found %r" % kind)
        total = sum(len(c) for c in chunks)
    blob = b"".join(chunks)
    if record_size == 0:
        return blob, cycles
    if unfinalized:
        if total % record_size:
            fail(at, "%d bytes of data are not whole records of %d bytes" % (total, record_size))
        cycles = total // record_size
    elif total != cycles * record_size:
        fail(at, "cg_cycle_count %d records of %d bytes, but the data blocks hold %d bytes" % (cycles, record_size, total))
    return blob, cycles


def value(ch, rec):
    raw = rec[ch.off:ch.off + ch.bits // 8]
    if ch.dt == 4:
        v = struct.unpack("<d" if ch.bits == 64 else "<f", raw)[0]
    elif ch.dt == 0:
        v = int.from_bytes(raw, "little")
    elif ch.dt == 2:
        v = int.from_bytes(raw, "little", signed=True)
    else:
        return '"?"'
    cc = ch.cc
    if cc and cc["type"] == 7:
        for k, t in zip(cc["vals"], cc["texts"]):
            if float(v) == k:
                return _q(t or "")
        return _q(cc["texts"][-1] or "")
    if cc and cc["type"] == 1:
        a, b = cc["vals"]
        return fmt(a + b * v)
    if ch.dt == 4:
        return fmt(v)
    return str(v)


def main(path):
    with open(path, "rb") as f:
        data = f.read()
    m = MDF(data)
    if len(data) < 64 + 104:
        fail(None, "too short for an MDF 4 file")
    fid, ver, prog = data[0:8], data[8:16], data[16:24]
    if fid not in (b"MDF     ", b"UnFinMF "):
        fail(None, "not an MDF file: it starts %r" % fid)
    version = struct.unpack_from("<H", data, 28)[0]
    if not 400 <= version < 500:
        fail(None, "MDF version %d: expected 4.x" % version)
    unfin = struct.unpack_from("<H", data, 60)[0]
    if fid == b"MDF     " and unfin:
        fail(0, "a finalized file with unfinalized flags 0x%x" % unfin)
    if unfin & ~0x5:
        fail(0, "unfinalized flags 0x%x: only cycle counts and the last DT length are worked out here" % unfin)
    _, hd, hdd = m.block(64, "HD", 6, 32)
    # The file history is mandatory, with the tool's identity.
    if hd[1] == 0:
        fail(64, "no file history (FH) block: the standard requires one")
    for fh in m.chain(hd[1], "FH"):
        _, fl, fd = m.block(fh, "FH", 2, 16)
        if fl[1] == 0:
            fail(fh, "FH block without its comment")
        x = ET.fromstring(m.text(fl[1], ("MD",)))
        if x.tag != "FHcomment":
            fail(fl[1], "FH comment's root is <%s>, expected <FHcomment>" % x.tag)
        for tag in ("tool_id", "tool_vendor", "tool_version"):
            if x.find(tag) is None:
                fail(fl[1], "FH comment without <%s>" % tag)
    m.text(hd[5])
    out = ["VERSION %d.%02d" % (version // 100, version % 100)]
    cgs = {}
    for dgi, dg in enumerate(m.chain(hd[0], "DG")):
        _, dl, dd = m.block(dg, "DG", 4, 1)
        if dd[0] != 0:
            fail(dg, "unsorted data group: not read here")
        m.text(dl[3])
        for cgi, cg in enumerate(m.chain(dl[1], "CG")):
            if cgi > 0:
                fail(cg, "a sorted data group with several channel groups")
            _, cl, cd = m.block(cg, "CG", 6, 32)
            rec_id, cycles, flags, sep = struct.unpack_from("<QQHH", cd, 0)
            data_bytes, inval = struct.unpack_from("<II", cd, 24)
            name = m.text(cl[2], ("TX",))
            m.text(cl[5])
            cgs[cg] = (dgi, cgi)
            chans = []
            for cn in m.chain(cl[1], "CN"):
                ch, _ = read_channel(m, cn, data_bytes + inval)
                chans.append(ch)
            masters = [c for c in chans if c.ctype in (2, 3)]
            if len(masters) != 1:
                fail(cg, "channel group %r has %d master channels: expected one" % (name, len(masters)))
            names = [c.name for c in chans]
            if len(set(names)) != len(names):
                fail(cg, "channel group %r names a channel twice" % name)
            blob, n = values_of(m, dl[2], data_bytes + inval, cycles, bool(unfin & 1), cg)
            size = data_bytes + inval
            recs = [blob[i * size:(i + 1) * size] for i in range(n)]
            master = masters[0]
            out.append('DG %d CG %d name=%s samples=%d channels=%d master=%s' % (dgi, cgi, _q(name), n, len(chans), _q(master.name)))
            for ch in [master] + [c for c in chans if c is not master]:
                vals = [value(ch, r) for r in recs]
                crc = 0
                for v in vals:
                    crc = zlib.crc32((v + "\n").encode("utf-8"), crc)
                conv = ch.cc["type"] if ch.cc else -1
                out.append('CN %d/%d %s unit=%s type=%s ctype=%s sync=%s conv=%d n=%d crc=0x%08x first=[%s] last=[%s]' % (
                    dgi, cgi, _q(ch.name), _q(ch.unit), typename(ch.dt, ch.bits), CTYPES.get(ch.ctype, "?"),
                    SYNCS.get(ch.sync, "?"), conv, n, crc, ", ".join(vals[:3]), ", ".join(vals[max(0, n - 3):])))
    atts = {}
    for i, at in enumerate(m.chain(hd[3], "AT")):
        _, al, ad = m.block(at, "AT", 4, 40)
        flags = struct.unpack_from("<H", ad, 0)[0]
        md5 = ad[8:24]
        orig, emb = struct.unpack_from("<QQ", ad, 24)
        if al[1] == 0:
            fail(at, "an attachment without its file name")
        m.text(al[1], ("TX",))
        m.text(al[2], ("TX",))
        m.text(al[3])
        if flags & 1:
            if 40 + emb > len(ad):
                fail(at, "embedded data of %d bytes in a block of %d" % (emb, len(ad)))
            payload = ad[40:40 + emb]
            if flags & 4 and hashlib.md5(payload).digest() != md5:
                fail(at, "the attachment's MD5 sum does not match its data")
            if not flags & 2 and orig != emb:
                fail(at, "an uncompressed attachment whose original size %d is not its embedded size %d" % (orig, emb))
        atts[at] = i
    evs = list(m.chain(hd[4], "EV"))
    out.append("EVENTS %d" % len(evs))
    ranges = {}
    for i, ev in enumerate(evs):
        _, el, ed = m.block(ev, "EV", 5, 32)
        etype, sync, rng, cause, flags = ed[0], ed[1], ed[2], ed[3], ed[4]
        nscope, natt = struct.unpack_from("<IH", ed, 8)
        base, factor = struct.unpack_from("<qd", ed, 16)
        if len(el) < 5 + nscope + natt:
            fail(ev, "ev_scope_count %d and ev_attachment_count %d with %d links" % (nscope, natt, len(el)))
        for s in el[5:5 + nscope]:
            if s not in cgs and m.d[s:s + 4] not in (b"##CN", b"##CG"):
                fail(ev, "a scope link that is not a channel or channel group")
        for a in el[5 + nscope:5 + nscope + natt]:
            if a not in atts:
                fail(ev, "an attachment reference that is not one of the file's attachments")
        if rng == 2:
            if el[2] == 0 or ranges.get(el[2]) != 1:
                fail(ev, "an event ending a range without a link to the event beginning it")
        ranges[ev] = rng
        name = m.text(el[3], ("TX",))
        m.text(el[4])
        out.append("EV %d name=%s type=%d sync=%d range=%d cause=%d value=%s" % (
            i, _q(name), etype, sync, rng, cause, fmt(base * factor)))
    print("\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: mdfcheck.py FILE.mf4", file=sys.stderr)
        sys.exit(2)
    try:
        main(sys.argv[1])
    except Broken as e:
        print("mdfcheck: %s: %s" % (sys.argv[1], e), file=sys.stderr)
        sys.exit(1)
