package respcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/http"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fusiongo/transport/internal/testsupport/race"
)

// codecCases are entries that must survive an encoding: every field set,
// the zero entry, and the edges of each field.
func codecCases() map[string]*Entry {
	return map[string]*Entry{
		"full": {
			Status: 200,
			Header: http.Header{
				"Content-Type":  {"application/json"},
				"Cache-Control": {"public, max-age=60", "s-maxage=30"},
				"X-Empty":       {""},
			},
			Body:                 []byte(`{"data":{"ok":true}}`),
			Date:                 time.Date(2026, 12, 6, 14, 5, 54, 123456789, time.UTC),
			InitialAge:           3 * time.Second,
			Lifetime:             time.Minute,
			StaleWhileRevalidate: 10 * time.Second,
			StaleIfError:         time.Hour,
			Tags:                 []string{"product:1", "", "*"},
			Shared:               true,
			VaryNames:            []string{"Accept-Language", "X-Tenant"},
		},
		"zero": {},
		"edges": {
			Status:     599,
			Date:       time.Unix(-1, 999999999).UTC(),
			InitialAge: -time.Nanosecond, // a clock set back; kept as it came
			Lifetime:   time.Duration(1<<63 - 1),
			Body:       make([]byte, 70000),
			Header:     http.Header{"A": nil},
		},
	}
}

// entryOpts compare decoded entries: an empty slice or map and nil are the
// same entry (the encoding does not tell them apart), and times compare by
// instant (a decoded Date is in UTC).
var entryOpts = cmp.Options{
	cmpopts.EquateEmpty(),
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
}

// TestCodecRoundTrip: what appendEntry writes, decodeEntry reads back equal,
// after any bytes already in the buffer.
func TestCodecRoundTrip(t *testing.T) {
	for name, e := range codecCases() {
		t.Run(name, func(t *testing.T) {
			buf := appendEntry([]byte("prefix"), e)
			got, err := decodeEntry(string(buf[len("prefix"):]))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if diff := cmp.Diff(e, got, entryOpts); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCodecRejects: every truncation of a valid encoding, another
// version, trailing bytes and forged counts are errors wrapping errDecode.
func TestCodecRejects(t *testing.T) {
	valid := appendEntry(nil, codecCases()["full"])
	for n := range len(valid) {
		if _, err := decodeEntry(string(valid[:n])); !errors.Is(err, errDecode) {
			t.Fatalf("truncated to %d of %d bytes: err = %v, want errDecode", n, len(valid), err)
		}
	}
	other := append([]byte{codecVersion + 1}, valid[1:]...)
	cases := map[string][]byte{
		"another version": other,
		"trailing bytes":  append(append([]byte(nil), valid...), 0),
		// version, status 200, date 0 0, four durations 0, flags 0, then a
		// header count far above the bytes left.
		"forged count":    {codecVersion, 0xc8, 0x01, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"unknown flag":    {codecVersion, 0xc8, 0x01, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0},
		"overlong varint": {codecVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
		// status 200, date 0 s and 1e9 ns, then a valid rest.
		"nanoseconds past a second": append(binary.AppendUvarint([]byte{codecVersion, 0xc8, 0x01, 0}, uint64(time.Second)),
			0, 0, 0, 0, 0, 0, 0, 0, 0),
	}
	for name, data := range cases {
		if e, err := decodeEntry(string(data)); !errors.Is(err, errDecode) {
			t.Errorf("%s: got %+v, %v; want errDecode", name, e, err)
		}
	}
}

// TestDecodeAllocs: decoding an entry allocates the entry with its
// strings (up to 8 of them: header values, tags, vary names) at once, its
// header map and its body: 4 allocations, whatever the number of headers
// and lists; with more strings, one more for them all.
func TestDecodeAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	small := codecCases()["full"]
	small.Tags = small.Tags[:1] // 4 header values, 1 tag, 2 vary names
	for _, tc := range []struct {
		name string
		e    *Entry
		want float64
	}{{"8 strings", small, 4}, {"9 strings", codecCases()["full"], 5}} {
		data := string(appendEntry(nil, tc.e))
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := decodeEntry(data); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != tc.want {
			t.Errorf("%s: decoding allocates %v, want %v", tc.name, allocs, tc.want)
		}
	}
}

// FuzzDecodeEntry: decoding never panics, and whatever decodes encodes to
// bytes that decode to the same entry.
func FuzzDecodeEntry(f *testing.F) {
	for _, e := range codecCases() {
		f.Add(appendEntry(nil, e))
	}
	f.Add([]byte{})
	f.Add([]byte{codecVersion})
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := decodeEntry(string(data))
		if err != nil {
			if !errors.Is(err, errDecode) {
				t.Fatalf("error %v does not wrap errDecode", err)
			}
			return
		}
		again, err := decodeEntry(string(appendEntry(nil, e)))
		if err != nil {
			t.Fatalf("re-encoding of a decoded entry does not decode: %v", err)
		}
		if diff := cmp.Diff(e, again, entryOpts); diff != "" {
			t.Fatalf("re-encoding changed the entry (-first +second):\n%s", diff)
		}
	})
}

// TestDetachedOwnsItsStrings: a decoded entry's strings are slices of the
// whole encoding, its body's bytes included; its detached copy, which the
// memory level in front of Redis keeps, holds strings of its own (none
// points into the encoding, so the encoding can go) equal to the decoded
// ones.
func TestDetachedOwnsItsStrings(t *testing.T) {
	e := &Entry{
		Status: 200, Body: bytes.Repeat([]byte("b"), 64<<10),
		Header: http.Header{"Content-Type": {"application/json"}, "Cache-Tag": {"a", "b"}},
		Tags:   []string{"a", "b"}, VaryNames: []string{"X-Tenant"},
		Date: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC), Lifetime: time.Minute,
	}
	data := string(appendEntry(nil, e))
	dec, err := decodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	start := uintptr(unsafe.Pointer(unsafe.StringData(data)))
	inData := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return len(s) > 0 && p >= start && p < start+uintptr(len(data))
	}
	if !inData(dec.Header.Get("Content-Type")) {
		t.Fatal("the decoded entry's strings are not slices of the encoding: this test checks nothing")
	}
	d := dec.detached()
	if !cmp.Equal(d, dec) {
		t.Fatalf("detached differs from the decoded entry:\n%s", cmp.Diff(dec, d))
	}
	var all []string
	for k, vs := range d.Header {
		all = append(append(all, k), vs...)
	}
	all = append(append(all, d.Tags...), d.VaryNames...)
	for _, s := range all {
		if inData(s) {
			t.Errorf("the detached entry's %q points into the encoding", s)
		}
	}
	if &d.Body[0] != &dec.Body[0] {
		t.Error("the detached entry copied the body, which decodeEntry copied already")
	}
}
