package env

import (
	"fmt"
	"strings"
)

// SwitchVar is the environment variable that picks the path at startup.
const SwitchVar = "FUSION_SOCKETS_TRANSPORT"

// ForwardHeadersVar is the environment variable that lists the gateway
// request headers forwarded to every source schema, comma-separated.
const ForwardHeadersVar = "FUSION_FORWARD_HEADERS"

// ParseSwitch parses a value of FUSION_SOCKETS_TRANSPORT or of the file's
// transport key, the one place that knows the grammar:
//
//	1, true, on, sockets          the sockets path
//	0, false, off, legacy, empty  the legacy path
//
// Case and surrounding space are ignored. Any other value is an error that
// lists the accepted ones.
func ParseSwitch(value string) (Path, error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "1", "true", "on", "sockets":
		return PathSockets, nil
	case "", "0", "false", "off", "legacy":
		return PathLegacy, nil
	}
	return "", fmt.Errorf("invalid value %q: want 1, true, on or sockets (sockets path), or 0, false, off, legacy or empty (legacy path)", value)
}

// splitList splits a comma-separated list, dropping empty items and space.
func splitList(value string) []string {
	var out []string
	for item := range strings.SplitSeq(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
