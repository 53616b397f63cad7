package respcache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// codecVersion is the first byte of every encoded entry. A store that meets
// another version (a replica of a newer release on the same Redis) treats
// the entry as a miss and the answer is fetched again, so the format may
// change without a flush: raise the version whenever the layout changes.
const codecVersion = 1

// The layout after the version byte, every integer a varint
// (encoding/binary; signed ones zig-zag) and every string or byte slice
// its length (uvarint) then its bytes:
//
//	status                  uvarint
//	date                    varint seconds since 1970, uvarint nanoseconds
//	initial age, lifetime,
//	stale-while-revalidate,
//	stale-if-error          varint nanoseconds each
//	flags                   one byte: 1 = Shared
//	header                  uvarint name count, then per name: name,
//	                        uvarint value count, values
//	tags, vary names        uvarint count, then strings
//	body                    bytes
const flagShared = 1

// errDecode is the cause of every decoding failure: the data is not an
// entry this release wrote (truncated, another version, garbage).
var errDecode = errors.New("respcache: undecodable entry")

// appendEntry appends e's encoding to dst.
func appendEntry(dst []byte, e *Entry) []byte {
	dst = append(dst, codecVersion)
	dst = binary.AppendUvarint(dst, uint64(max(e.Status, 0)))
	dst = binary.AppendVarint(dst, e.Date.Unix())
	dst = binary.AppendUvarint(dst, uint64(e.Date.Nanosecond()))
	for _, d := range [...]time.Duration{e.InitialAge, e.Lifetime, e.StaleWhileRevalidate, e.StaleIfError} {
		dst = binary.AppendVarint(dst, int64(d))
	}
	var flags byte
	if e.Shared {
		flags |= flagShared
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(len(e.Header)))
	for name, values := range e.Header {
		dst = appendString(dst, name)
		dst = appendStrings(dst, values)
	}
	dst = appendStrings(dst, e.Tags)
	dst = appendStrings(dst, e.VaryNames)
	dst = binary.AppendUvarint(dst, uint64(len(e.Body)))
	return append(dst, e.Body...)
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ss)))
	for _, s := range ss {
		dst = appendString(dst, s)
	}
	return dst
}

// decodeEntry decodes what appendEntry wrote. The entry's strings share
// data's memory (a string is immutable, so nothing can change them); its
// Body is a copy. Any input that is not a whole entry of codecVersion is an
// error wrapping errDecode, never a panic: the data comes from a shared
// Redis that anything may have written to.
//
// It reads data twice: first to check it whole and count its strings,
// then to fill an entry allocated with room for them all (newEntry), so
// that a hit's header values, tags and vary names cost one allocation,
// not one each.
func decodeEntry(data string) (*Entry, error) {
	check := decoder{s: data}
	var scratch Entry
	check.entry(&scratch)
	if check.err != nil {
		return nil, check.err
	}
	e, strs := newEntry(check.strs)
	d := decoder{s: data, fill: true, slab: strs}
	d.entry(e)
	if d.err != nil { // the same bytes, read the same way: cannot be
		return nil, d.err
	}
	return e, nil
}

// newEntry returns an entry and n strings for it, in one allocation where
// n is small (an entry rarely has more than a few header values, tags and
// vary names): the entry points into a block that holds both, which the
// entry keeps whole.
func newEntry(n int) (*Entry, []string) {
	switch {
	case n == 0:
		return &Entry{}, nil
	case n <= 4:
		b := &struct {
			e Entry
			s [4]string
		}{}
		return &b.e, b.s[:n]
	case n <= 8:
		b := &struct {
			e Entry
			s [8]string
		}{}
		return &b.e, b.s[:n]
	}
	return &Entry{}, make([]string, n)
}

// entry reads one entry into e: its fields only while checking, its
// header map, strings and body too when d.fill.
func (d *decoder) entry(e *Entry) {
	if v := d.byte(); v != codecVersion {
		if d.err == nil {
			d.err = fmt.Errorf("%w: version %d, want %d", errDecode, v, codecVersion)
		}
		return
	}
	status := d.uvarint()
	if status > math.MaxInt32 {
		d.fail("status")
	}
	e.Status = int(status)
	sec, nsec := d.varint(), d.uvarint()
	if nsec >= uint64(time.Second) {
		d.fail("date")
	}
	if d.err == nil {
		e.Date = time.Unix(sec, int64(nsec)).UTC()
	}
	e.InitialAge = time.Duration(d.varint())
	e.Lifetime = time.Duration(d.varint())
	e.StaleWhileRevalidate = time.Duration(d.varint())
	e.StaleIfError = time.Duration(d.varint())
	flags := d.byte()
	if flags&^flagShared != 0 {
		d.fail("flags")
	}
	e.Shared = flags&flagShared != 0
	if n := d.count(); n > 0 {
		if d.fill {
			e.Header = make(http.Header, n)
		}
		for range n {
			name := d.string()
			values := d.strings()
			if d.err != nil {
				break
			}
			if d.fill {
				e.Header[name] = values
			}
		}
	}
	e.Tags = d.strings()
	e.VaryNames = d.strings()
	if n := d.count(); n > 0 && d.err == nil {
		if d.fill {
			e.Body = []byte(d.s[d.off : d.off+n])
		}
		d.off += n
	}
	if d.err == nil && d.off != len(d.s) {
		d.fail("trailing bytes")
	}
}

// detached returns a copy of e, a decoded entry, whose strings (header
// names and values, tags, vary names) are copies in one block of their
// own: a decoded entry's strings are slices of the whole encoding, body
// included, which they keep alive as long as the entry lives. The body is
// shared: decodeEntry copies it already.
func (e *Entry) detached() *Entry {
	d := *e
	n, size := len(e.Tags)+len(e.VaryNames), 0
	for k, vs := range e.Header {
		n += len(vs)
		size += len(k)
		for _, v := range vs {
			size += len(v)
		}
	}
	for _, t := range e.Tags {
		size += len(t)
	}
	for _, v := range e.VaryNames {
		size += len(v)
	}
	// One block for every string: grown once, so that each string taken
	// from it stays where it was written (a Builder appends in place
	// while it has room).
	var b strings.Builder
	b.Grow(size)
	cp := func(s string) string {
		at := b.Len()
		b.WriteString(s)
		return b.String()[at:]
	}
	slab := make([]string, n)
	list := func(src []string) []string {
		if len(src) == 0 {
			return src
		}
		out := slab[:len(src):len(src)]
		slab = slab[len(src):]
		for i, v := range src {
			out[i] = cp(v)
		}
		return out
	}
	if e.Header != nil {
		d.Header = make(http.Header, len(e.Header))
		for k, vs := range e.Header {
			d.Header[cp(k)] = list(vs)
		}
	}
	d.Tags = list(e.Tags)
	d.VaryNames = list(e.VaryNames)
	return &d
}

// decoder reads an encoded entry; the first failure sticks in err and
// makes every later read return zero values.
type decoder struct {
	s   string // the encoding; owned by the caller, only read
	off int    // the next byte to read
	err error  // the first failure, or nil

	// fill: make the entry's header map, strings and body; otherwise only
	// check the encoding and count its strings in strs.
	fill bool
	strs int      // the strings of the lists read so far (header values, tags, vary names)
	slab []string // when fill, the room left for them (newEntry's)
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s at byte %d", errDecode, what, d.off)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || d.off >= len(d.s) {
		d.fail("length")
		return 0
	}
	b := d.s[d.off]
	d.off++
	return b
}

// uvarint reads an unsigned varint; binary.Uvarint wants a []byte, and
// converting d.s would copy it, so the loop is its own.
func (d *decoder) uvarint() uint64 {
	var x uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if d.err != nil || d.off >= len(d.s) {
			d.fail("varint")
			return 0
		}
		b := d.s[d.off]
		d.off++
		if shift == 63 && b > 1 {
			d.fail("varint")
			return 0
		}
		x |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return x
		}
	}
	d.fail("varint")
	return 0
}

func (d *decoder) varint() int64 {
	ux := d.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// count reads a length or an element count, which can be no more than the
// bytes left (each element takes at least one): so a forged count cannot
// make the decoder allocate more than the input's size.
func (d *decoder) count() int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.s)-d.off) {
		d.fail("count")
		return 0
	}
	return int(n)
}

func (d *decoder) string() string {
	n := d.count()
	if d.err != nil {
		return ""
	}
	s := d.s[d.off : d.off+n]
	d.off += n
	return s
}

func (d *decoder) strings() []string {
	n := d.count()
	if d.err != nil || n == 0 {
		return nil
	}
	var ss []string
	if d.fill {
		if len(d.slab) < n { // the check counted otherwise: cannot be
			d.fail("count")
			return nil
		}
		// Capped at n: an append to the list cannot reach the next one.
		ss, d.slab = d.slab[:0:n], d.slab[n:]
	}
	for range n {
		s := d.string()
		if d.err != nil {
			return nil
		}
		if d.fill {
			ss = append(ss, s)
		}
	}
	d.strs += n
	return ss
}
