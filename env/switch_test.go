package env_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fusiongo/transport/env"
)

// acceptedSwitch lists every value FUSION_SOCKETS_TRANSPORT and the file's
// transport key accept, with case and surrounding space varied.
var acceptedSwitch = []struct {
	value string
	want  env.Path
}{
	{"1", env.PathSockets},
	{"true", env.PathSockets},
	{"on", env.PathSockets},
	{"sockets", env.PathSockets},
	{"TRUE", env.PathSockets},
	{"True", env.PathSockets},
	{"ON", env.PathSockets},
	{"oN", env.PathSockets},
	{"Sockets", env.PathSockets},
	{" 1", env.PathSockets},
	{"on ", env.PathSockets},
	{"\ttrue\n", env.PathSockets},
	{"0", env.PathLegacy},
	{"false", env.PathLegacy},
	{"off", env.PathLegacy},
	{"legacy", env.PathLegacy},
	{"", env.PathLegacy},
	{"FALSE", env.PathLegacy},
	{"Off", env.PathLegacy},
	{"LEGACY", env.PathLegacy},
	{"  ", env.PathLegacy},
	{" 0 ", env.PathLegacy},
	{"\r\nfalse\t", env.PathLegacy},
}

// rejectedSwitch lists values that are close to accepted ones.
var rejectedSwitch = []string{
	"2", "-1", "01", "1.0", "yes", "no", "y", "n", "t", "f", "enable", "disabled",
	"truee", "tru e", "o n", "socket", "sockets!", "legacy,sockets", "\x00", "on\x00", "１",
}

const acceptedValues = "want 1, true, on or sockets (sockets path), or 0, false, off, legacy or empty (legacy path)"

func TestParseSwitch(t *testing.T) {
	for _, tt := range acceptedSwitch {
		t.Run(fmt.Sprintf("%q", tt.value), func(t *testing.T) {
			got, err := env.ParseSwitch(tt.value)
			if err != nil || got != tt.want {
				t.Errorf("ParseSwitch(%q) = %q, %v; want %q, nil", tt.value, got, err, tt.want)
			}
		})
	}
	for _, value := range rejectedSwitch {
		t.Run(fmt.Sprintf("%q", value), func(t *testing.T) {
			got, err := env.ParseSwitch(value)
			want := fmt.Sprintf("invalid value %q: %s", value, acceptedValues)
			if err == nil || err.Error() != want || got != "" {
				t.Errorf("ParseSwitch(%q) = %q, %v; want \"\", %s", value, got, err, want)
			}
		})
	}
}

func TestLoadSwitchVar(t *testing.T) {
	for _, tt := range acceptedSwitch {
		t.Run(fmt.Sprintf("%q", tt.value), func(t *testing.T) {
			cfg := mustLoad(t, env.Loader{LookupEnv: lookupEnv(map[string]string{env.SwitchVar: tt.value})})
			if cfg.Transport != tt.want || cfg.Path() != tt.want {
				t.Errorf("Transport = %q, Path() = %q; want %q", cfg.Transport, cfg.Path(), tt.want)
			}
		})
	}
	for _, value := range rejectedSwitch {
		t.Run(fmt.Sprintf("%q", value), func(t *testing.T) {
			cfg, err := env.Loader{LookupEnv: lookupEnv(map[string]string{env.SwitchVar: value})}.Load()
			want := fmt.Sprintf("FUSION_SOCKETS_TRANSPORT: invalid value %q: %s", value, acceptedValues)
			if err == nil || err.Error() != want {
				t.Fatalf("Load() = %+v, %v; want error %s", cfg, err, want)
			}
			var ke *env.KeyError
			if !errors.As(err, &ke) || ke.Key != env.SwitchVar || ke.Value != value {
				t.Errorf("KeyError = %+v, want Key %s, Value %q", ke, env.SwitchVar, value)
			}
		})
	}
	t.Run("unset", func(t *testing.T) {
		cfg := mustLoad(t, env.Loader{LookupEnv: lookupEnv(map[string]string{"OTHER": "1"})})
		if cfg.Path() != env.PathLegacy {
			t.Errorf("Path() = %q, want %q", cfg.Path(), env.PathLegacy)
		}
	})
}

func TestSwitchVarOverridesFile(t *testing.T) {
	tests := []struct {
		name string
		file string // the transport key's line, if any
		vars map[string]string
		want env.Path
	}{
		{"file sockets, variable unset", "transport: sockets\n", nil, env.PathSockets},
		{"file legacy, variable unset", "transport: legacy\n", nil, env.PathLegacy},
		{"no key, variable unset", "", nil, env.PathLegacy},
		{"no key, variable on", "", map[string]string{env.SwitchVar: "on"}, env.PathSockets},
		{"file legacy, variable 1", "transport: legacy\n", map[string]string{env.SwitchVar: "1"}, env.PathSockets},
		{"file sockets, variable 0", "transport: sockets\n", map[string]string{env.SwitchVar: "0"}, env.PathLegacy},
		{"file sockets, variable off", "transport: sockets\n", map[string]string{env.SwitchVar: "off"}, env.PathLegacy},
		{"file sockets, variable empty", "transport: sockets\n", map[string]string{env.SwitchVar: ""}, env.PathLegacy},
		{"file sockets, variable FALSE", "transport: sockets\n", map[string]string{env.SwitchVar: " FALSE "}, env.PathLegacy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, env.Loader{LookupEnv: lookupEnv(tt.vars)}, writeConfig(t, tt.file))
			if cfg.Path() != tt.want {
				t.Errorf("Path() = %q, want %q", cfg.Path(), tt.want)
			}
		})
	}
	t.Run("variable overrides an invalid file value", func(t *testing.T) {
		// The variable replaces the file's value before it is decoded.
		_, err := env.Loader{LookupEnv: lookupEnv(map[string]string{env.SwitchVar: "1"})}.Load(writeConfig(t, "transport: fast\n"))
		if err != nil {
			t.Fatalf("Load() error = %v; want the variable's value to replace the file's", err)
		}
	})
}

// TestFileTransport covers the file's transport key: the same words as the
// variable, including the ones YAML reads as a bool, a number or null.
func TestFileTransport(t *testing.T) {
	tests := []struct {
		yaml string
		want env.Path
	}{
		{"transport: sockets", env.PathSockets},
		{"transport: Sockets", env.PathSockets},
		{"transport: on", env.PathSockets},
		{"transport: true", env.PathSockets},
		{"transport: 1", env.PathSockets},
		{`transport: "1"`, env.PathSockets},
		{"transport: legacy", env.PathLegacy},
		{"transport: off", env.PathLegacy},
		{"transport: false", env.PathLegacy},
		{"transport: 0", env.PathLegacy},
		{`transport: ""`, env.PathLegacy},
		{"transport:", env.PathLegacy},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			cfg := mustLoad(t, env.Loader{}, writeConfig(t, tt.yaml+"\n"))
			if cfg.Transport != tt.want {
				t.Errorf("Transport = %q, want %q", cfg.Transport, tt.want)
			}
		})
	}
}

func FuzzParseSwitch(f *testing.F) {
	for _, tt := range acceptedSwitch {
		f.Add(tt.value)
	}
	for _, v := range rejectedSwitch {
		f.Add(v)
	}
	words := map[string]env.Path{
		"1": env.PathSockets, "true": env.PathSockets, "on": env.PathSockets, "sockets": env.PathSockets,
		"": env.PathLegacy, "0": env.PathLegacy, "false": env.PathLegacy, "off": env.PathLegacy, "legacy": env.PathLegacy,
	}
	f.Fuzz(func(t *testing.T, value string) {
		p, err := env.ParseSwitch(value)
		if err != nil {
			if p != "" {
				t.Errorf("ParseSwitch(%q) = %q with error %v, want \"\"", value, p, err)
			}
			if want := fmt.Sprintf("invalid value %q: %s", value, acceptedValues); err.Error() != want {
				t.Errorf("ParseSwitch(%q) error = %q, want %q", value, err, want)
			}
			return
		}
		if p != env.PathLegacy && p != env.PathSockets {
			t.Fatalf("ParseSwitch(%q) = %q, nil: not a valid Path", value, p)
		}
		if want, ok := words[strings.ToLower(strings.TrimSpace(value))]; !ok || p != want {
			t.Errorf("ParseSwitch(%q) = %q, nil; want an error or %q", value, p, want)
		}
		if err := (env.Config{Transport: p}).Validate(); err != nil {
			t.Errorf("Config{Transport: %q}.Validate() = %v", p, err)
		}
	})
}
