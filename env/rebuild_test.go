package env_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/setting"
)

// settingLeaves returns, for every field of Settings (a section such as
// Retry counted by its own fields, a value such as HedgeDelay as one), its
// Go path and a Settings with that field alone set to a value other than
// its zero.
func settingLeaves(t *testing.T) map[string]env.Settings {
	t.Helper()
	out := map[string]env.Settings{}
	var walk func(path string, typ reflect.Type, index []int)
	walk = func(path string, typ reflect.Type, index []int) {
		for _, f := range reflect.VisibleFields(typ) {
			idx := append(slices.Clone(index), f.Index...)
			name := strings.TrimPrefix(path+"."+f.Name, ".")
			if f.Type.Kind() == reflect.Struct && strings.HasSuffix(f.Type.Name(), "Settings") {
				walk(name, f.Type, idx)
				continue
			}
			var s env.Settings
			v := reflect.ValueOf(&s).Elem().FieldByIndex(idx)
			switch v.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int64:
				v.SetInt(1)
			case reflect.Float64:
				v.SetFloat(0.5)
			case reflect.String:
				v.SetString("x")
			case reflect.Slice: // one item: setting.Diff tells no list from an empty one
				v.Set(reflect.Append(reflect.MakeSlice(v.Type(), 0, 1), one(v.Type().Elem())))
			case reflect.Map:
				v.Set(reflect.MakeMapWithSize(v.Type(), 1))
				v.SetMapIndex(one(v.Type().Key()), one(v.Type().Elem()))
			case reflect.Struct: // a value of one key, as HedgeDelay
				v.Field(0).SetInt(1)
			default:
				t.Fatalf("Settings.%s: no test value for a %s", name, v.Kind())
			}
			out[name] = s
		}
	}
	walk("", reflect.TypeFor[env.Settings](), nil)
	return out
}

// one returns a value of a list's item or a mapping's key or value other
// than its zero: "x" or 1.
func one(typ reflect.Type) reflect.Value {
	v := reflect.New(typ).Elem()
	if typ.Kind() == reflect.String {
		v.SetString("x")
	} else {
		v.SetInt(1)
	}
	return v
}

// TestRebuildTableCoversEverySetting: every field of Settings is exactly
// one key of the table (setting.Keys), every key is one field, and the
// table says what a change of each key rebuilds on both paths, so that a
// new setting cannot be forgotten by a reload.
func TestRebuildTableCoversEverySetting(t *testing.T) {
	fieldOf := map[string]string{} // key -> Settings field
	for name, s := range settingLeaves(t) {
		keys := setting.Diff(env.Settings{}, s)
		if len(keys) != 1 {
			t.Errorf("Settings.%s is the keys %q; want exactly one key", name, keys)
			continue
		}
		if other, ok := fieldOf[keys[0]]; ok {
			t.Errorf("key %s is both Settings.%s and Settings.%s", keys[0], other, name)
		}
		fieldOf[keys[0]] = name
	}
	for _, key := range setting.Keys() {
		if _, ok := fieldOf[key]; !ok {
			t.Errorf("key %s is no field of Settings", key)
		}
		for _, path := range []env.Path{env.PathSockets, env.PathLegacy} {
			if r := setting.Rebuilds(key, path); r == 0 {
				t.Errorf("Rebuilds(%q, %s) = %v; want what a change rebuilds", key, path, r)
			}
		}
	}
}

// TestRebuildColumnsAgree: the request path's keys are the same on both
// paths, each path's column holds only what that path builds, and the
// legacy path's shared client is built from keys that also build a pool.
func TestRebuildColumnsAgree(t *testing.T) {
	for _, key := range setting.Keys() {
		sockets, legacy := setting.Rebuilds(key, env.PathSockets), setting.Rebuilds(key, env.PathLegacy)
		switch {
		case (sockets == setting.RebuildRoute) != (legacy == setting.RebuildRoute):
			t.Errorf("%s: sockets %v, legacy %v: the request path's keys are the same on both paths", key, sockets, legacy)
		case sockets == setting.RebuildShared || sockets == setting.RebuildIgnored:
			t.Errorf("%s: sockets %v: the sockets path reads every key, and has no shared client", key, sockets)
		case legacy == setting.RebuildPool:
			t.Errorf("%s: legacy %v: the legacy path has no pool", key, legacy)
		case legacy == setting.RebuildShared && sockets != setting.RebuildPool:
			t.Errorf("%s: legacy %v, sockets %v: a key of the shared client builds a pool", key, legacy, sockets)
		}
	}
	if r := setting.Rebuilds("no_such_key", env.PathSockets); r != 0 {
		t.Errorf("Rebuilds of an unknown key = %v, want 0", r)
	}
	if r := setting.Rebuilds("connect_timeout", env.PathMixed); r != 0 {
		t.Errorf("Rebuilds on PathMixed = %v, want 0", r)
	}
}

// TestOnly: setting.Only keeps the values of the keys it is asked for and
// leaves every other key zero; the legacy path's shared client is the six
// keys its docs name.
func TestOnly(t *testing.T) {
	all := env.Config{}.EffectiveDefaults()
	all.Decompression = []string{env.CodecGzip}
	all.Headers.Forward = []string{"X-Tenant"}
	for _, tc := range []struct {
		path env.Path
		r    setting.Rebuild
		want []string // nil: not pinned
	}{
		{env.PathLegacy, setting.RebuildShared, []string{"connect_timeout", "idle_conn_timeout", "max_conns_per_host", "max_idle_conns_per_host", "max_response_header_bytes", "keep_alive"}},
		{env.PathSockets, setting.RebuildNothing, []string{"header_timeout", "request_timeout", "decompression",
			"headers.forward", "headers.forward_matching", "headers.rename", "headers.set", "headers.max_forwarded_bytes",
			"retry.max_attempts", "retry.wait_min", "retry.wait_max", "retry.statuses", "dedupe"}},
		{env.PathSockets, setting.RebuildPool, nil},
		{env.PathSockets, setting.RebuildRoute, nil},
	} {
		t.Run(string(tc.path)+" "+tc.r.String(), func(t *testing.T) {
			var keys []string
			for _, k := range setting.Keys() {
				if setting.Rebuilds(k, tc.path) == tc.r {
					keys = append(keys, k)
				}
			}
			only := setting.Only(all, tc.path, func(r setting.Rebuild) bool { return r == tc.r })
			// Of the keys that all sets, exactly the kept ones are set, each
			// to all's value.
			set := setting.Diff(env.Settings{}, all)
			var kept []string
			for _, k := range set {
				if slices.Contains(keys, k) {
					kept = append(kept, k)
				}
			}
			if diff := cmp.Diff(kept, setting.Diff(env.Settings{}, only), cmp.Transformer("sorted", sorted)); diff != "" {
				t.Errorf("keys set in Only mismatch (-want +got):\n%s", diff)
			}
			for _, k := range setting.Diff(only, all) {
				if slices.Contains(kept, k) {
					t.Errorf("Only changed the value of kept key %s", k)
				}
			}
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, keys, cmp.Transformer("sorted", sorted)); diff != "" {
					t.Errorf("keys of %v on %s mismatch (-want +got):\n%s", tc.r, tc.path, diff)
				}
			}
		})
	}
}

// sorted returns a sorted copy of keys.
func sorted(keys []string) []string { return slices.Sorted(slices.Values(keys)) }
