# Packet parsing shared by the walker's compiled units (_scan: packets in
# capture order; _index: the byte-range index): link, IP and TCP headers read
# in place, and the classic pcap record header.  Inline C only; decode_tcp
# (kafkaproto.capture.walker.packets) is the same rule in Python, for the
# twins.

from cpython.unicode cimport PyUnicode_DecodeASCII
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from kafkaproto._wire cimport kp_ld16, kp_ld32

cdef enum:
    _FIN = 0x01
    _SYN = 0x02
    _RST = 0x04
    _ACK = 0x10

cdef enum:
    # a pcap record's captured length above this means a damaged file
    CAP_MAX_RECORD = 256 * 1024 * 1024


cdef inline uint32_t _cap_ld32(const unsigned char* p, bint big) noexcept nogil:
    if big:
        return kp_ld32(p)
    return (<uint32_t>p[3] << 24) | (<uint32_t>p[2] << 16) | (<uint32_t>p[1] << 8) | <uint32_t>p[0]


cdef struct _Seg:
    int family          # 4 or 6
    Py_ssize_t src_at   # offsets of the addresses in the packet
    Py_ssize_t dst_at
    uint16_t sport, dport
    uint32_t seq, ack
    uint8_t flags
    Py_ssize_t payload_at
    Py_ssize_t caplen   # payload bytes present
    int64_t length      # payload bytes on the wire


# packets that are not TCP segments, by the reason decode_tcp gives (Accounting.packets)
cdef enum:
    R_MALFORMED = 1
    R_NOT_IP = 2
    R_NOT_TCP = 3
    R_FRAGMENT = 4
    R_LINK = 5
    N_REASONS = 6


cdef inline int _cap_parse(int linktype, const unsigned char* d, Py_ssize_t n, _Seg* s) noexcept nogil:
    """1: a TCP segment (decoded exactly as decode_tcp would), or -R_*: not
    one, for the reason decode_tcp gives."""
    cdef Py_ssize_t pos = 0, at, ihl, l4, doff, start, ext
    cdef int etype, nxt, i
    cdef uint32_t fam, le, be
    cdef int64_t total, l4_len
    if linktype == 1:  # Ethernet
        if n < 14:
            return -R_MALFORMED
        etype = kp_ld16(d + 12)
        pos = 14
        while etype == 0x8100 or etype == 0x88A8 or etype == 0x9100:
            if n < pos + 4:
                return -R_MALFORMED
            etype = kp_ld16(d + pos + 2)
            pos += 4
    elif linktype == 113 or linktype == 276:  # Linux cooked SLL, SLL2
        if linktype == 113:
            pos, at = 16, 14
        else:
            pos, at = 20, 0
        if n < pos:
            return -R_MALFORMED
        etype = kp_ld16(d + at)
    elif linktype == 0 or linktype == 108:  # BSD loopback
        if n < 4:
            return -R_MALFORMED
        be = kp_ld32(d)
        le = _cap_ld32(d, False)
        fam = be if linktype == 108 else (le if le < 256 else be)
        etype = 0x0800 if fam == 2 else (0x86DD if fam == 24 or fam == 28 or fam == 30 else -1)
        pos = 4
    elif linktype == 101 or linktype == 12 or linktype == 14 or linktype == 228 or linktype == 229:
        if n < 1:
            return -R_MALFORMED
        etype = 0x0800 if d[0] >> 4 == 4 else (0x86DD if d[0] >> 4 == 6 else -1)
    else:
        return -R_LINK
    if etype == 0x0800:
        if n < pos + 20:
            return -R_MALFORMED
        ihl = (d[pos] & 0x0F) * 4
        if d[pos] >> 4 != 4 or ihl < 20 or n < pos + ihl:
            return -R_MALFORMED
        total = kp_ld16(d + pos + 2)
        if total < ihl:
            # TCP segmentation offload captures show total length 0
            if total != 0:
                return -R_MALFORMED
            total = n - pos
        if d[pos + 9] != 6:
            return -R_NOT_TCP
        if kp_ld16(d + pos + 6) & 0x3FFF:  # MF flag + offset
            return -R_FRAGMENT
        s.family = 4
        s.src_at = pos + 12
        s.dst_at = pos + 16
        l4 = pos + ihl
        l4_len = total - ihl
    elif etype == 0x86DD:
        if n < pos + 40 or d[pos] >> 4 != 6:
            return -R_MALFORMED
        s.family = 6
        s.src_at = pos + 8
        s.dst_at = pos + 24
        nxt = d[pos + 6]
        l4 = pos + 40
        l4_len = kp_ld16(d + pos + 4)
        if l4_len == 0:
            l4_len = n - l4  # jumbogram / offload: use what is there
        for i in range(8):  # extension headers, bounded
            if nxt == 44:
                return -R_FRAGMENT
            if nxt != 0 and nxt != 43 and nxt != 60 and nxt != 51:
                break
            if n < l4 + 2:
                return -R_MALFORMED
            # the authentication header counts 4-byte units less 2, the others 8-byte units less 1
            ext = (d[l4 + 1] + 2) * 4 if nxt == 51 else (d[l4 + 1] + 1) * 8
            nxt = d[l4]
            l4 += ext
            l4_len -= ext
        if nxt != 6:
            return -R_NOT_TCP
    else:
        return -R_NOT_IP
    if l4_len < 20 or n < l4 + 20:
        return -R_MALFORMED
    doff = (d[l4 + 12] >> 4) * 4
    if doff < 20 or doff > l4_len or n < l4 + doff:
        return -R_MALFORMED
    s.sport = kp_ld16(d + l4)
    s.dport = kp_ld16(d + l4 + 2)
    s.seq = kp_ld32(d + l4 + 4)
    s.ack = kp_ld32(d + l4 + 8)
    s.flags = d[l4 + 13]
    start = l4 + doff
    s.length = l4_len - doff
    s.payload_at = start
    s.caplen = n - start if n - start < s.length else s.length
    return 1


cdef inline int pcap_record(const unsigned char* h, bint big, uint64_t scale, uint64_t* ts,
                            uint32_t* incl) noexcept nogil:
    """A classic pcap record header at ``h`` (16 bytes): its time stamp in
    nanoseconds and its captured length; 1, or 0 when the length is implausible."""
    cdef uint32_t sec = _cap_ld32(h, big)
    cdef uint32_t frac = _cap_ld32(h + 4, big)
    incl[0] = _cap_ld32(h + 8, big)
    ts[0] = <uint64_t>sec * 1000000000 + <uint64_t>frac * scale
    return incl[0] <= CAP_MAX_RECORD


cdef inline int _hex_group(char* out, unsigned int g) noexcept nogil:
    """``g`` (< 65536) in lowercase hex without leading zeros; its length."""
    cdef int n = 0, shift
    cdef unsigned int d
    for shift in range(12, -1, -4):
        d = (g >> shift) & 0xF
        if d or n or shift == 0:
            out[n] = (b"0123456789abcdef")[d]
            n += 1
    return n


cdef inline int _decimal(char* out, unsigned int v) noexcept nogil:
    """``v`` in decimal; its length."""
    cdef char tmp[12]
    cdef int n = 0, i
    while True:
        tmp[n] = <char>(48 + v % 10)
        n += 1
        v //= 10
        if not v:
            break
    for i in range(n):
        out[i] = tmp[n - 1 - i]
    return n


cdef inline str endpoint_text(int family, const unsigned char* a, unsigned int port):
    """``ip:port`` (IPv4) or ``[ip]:port`` (IPv6, RFC 5952: hex groups
    without leading zeros, the longest run of two or more zero groups -- the
    first of equal ones -- written ``::``), as packets.endpoint_text."""
    cdef char buf[64]
    cdef int n = 0, i, start = -1, best = -1, run = 0, best_len = 0
    cdef unsigned int g[8]
    if family == 4:
        for i in range(4):
            n += _decimal(buf + n, a[i])
            buf[n] = b"." if i < 3 else b":"
            n += 1
        n += _decimal(buf + n, port)
        return PyUnicode_DecodeASCII(buf, n, NULL)
    for i in range(8):
        g[i] = (a[2 * i] << 8) | a[2 * i + 1]
        if g[i] == 0:
            if start < 0:
                start = i
            run += 1
            if run > best_len:
                best_len = run
                best = start
        else:
            start = -1
            run = 0
    buf[0] = b"["
    n = 1
    if best_len > 1:
        for i in range(best):
            if i:
                buf[n] = b":"
                n += 1
            n += _hex_group(buf + n, g[i])
        buf[n] = b":"
        buf[n + 1] = b":"
        n += 2
        for i in range(best + best_len, 8):
            if i > best + best_len:
                buf[n] = b":"
                n += 1
            n += _hex_group(buf + n, g[i])
    else:
        for i in range(8):
            if i:
                buf[n] = b":"
                n += 1
            n += _hex_group(buf + n, g[i])
    buf[n] = b"]"
    buf[n + 1] = b":"
    n += 2
    n += _decimal(buf + n, port)
    return PyUnicode_DecodeASCII(buf, n, NULL)
