package env

import "github.com/fusiongo/transport/internal/setting"

// env's key table is read by the module's other packages through package
// setting (Rebuilds, Only, Diff, Keys, Engines), which env's public API
// does not show; env hands the table over here.
func init() {
	setting.Register(setting.Table[Settings, Path]{
		Keys:     settingKeys(),
		Engines:  engines,
		Rebuilds: rebuilds,
		Only:     only,
		Diff:     diffSettings,
	})
}

// rebuilds returns what a change of the setting key rebuilds on path,
// PathSockets or PathLegacy; the zero Rebuild for an unknown key or another
// path (setting.Rebuilds).
func rebuilds(key string, path Path) setting.Rebuild {
	f, ok := fieldByKey(key)
	if !ok {
		return 0
	}
	return f.rebuildOn(path)
}

// only returns the keys of s for which keep, given what a change of the key
// rebuilds on path, reports true; every other key is zero (inherit)
// (setting.Only).
func only(s Settings, path Path, keep func(setting.Rebuild) bool) Settings {
	var out Settings
	for _, f := range settingFields {
		if keep(f.rebuildOn(path)) {
			f.inherit(&out, &s) // out's key is zero: inherit copies s's value
		}
	}
	return out
}

// rebuildOn is f's column for path.
func (f field) rebuildOn(path Path) setting.Rebuild {
	switch path {
	case PathSockets:
		return f.sockets
	case PathLegacy:
		return f.legacy
	}
	return 0
}

// rebuilds sets f's column: what a change of its key rebuilds on the
// sockets path and on the legacy path.
func (f field) rebuilds(sockets, legacy setting.Rebuild) field {
	f.sockets, f.legacy = sockets, legacy
	return f
}
