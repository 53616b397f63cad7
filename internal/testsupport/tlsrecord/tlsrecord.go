// Package tlsrecord writes TLS records by hand, for tests whose server
// sends what crypto/tls has no API for: half a record, or a TLS 1.3 record
// of its own (a session ticket after the handshake, an empty record)
// sealed with the connection's keys. A Tap under the server's tls.Conn
// keeps and can hold back what crypto/tls writes; a Sealer seals further
// records at the sequence number that follows them.
package tlsrecord

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net"
	"strings"
	"sync"
)

// TLS record content types (RFC 8446, section 5.1).
const (
	TypeHandshake       = 22
	TypeApplicationData = 23
)

// Tap sits under a test server's tls.Conn: it keeps every byte
// crypto/tls writes, in order, and can hold them back so that the test
// decides what reaches the client.
type Tap struct {
	net.Conn
	mu   sync.Mutex
	all  []byte // every byte crypto/tls wrote, sent or held
	hold bool   // Write keeps bytes in held instead of sending them
	held []byte
}

func (t *Tap) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.all = append(t.all, p...)
	if t.hold {
		t.held = append(t.held, p...)
		t.mu.Unlock()
		return len(p), nil
	}
	t.mu.Unlock()
	return t.Conn.Write(p)
}

// HoldBack turns holding on or off; turning it off returns what was held,
// unsent.
func (t *Tap) HoldBack(on bool) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hold = on
	held := t.held
	t.held = nil
	return held
}

// Written returns every byte crypto/tls wrote so far.
func (t *Tap) Written() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.all...)
}

// Sealer seals TLS 1.3 records as the server of one connection
// would, with its application traffic secret, at the sequence number that
// follows the records the server's tls.Conn wrote.
type Sealer struct {
	aead cipher.AEAD
	iv   []byte
	seq  uint64
}

// NewSealer reads the server's application traffic secret from
// keylog (the connection's tls.Config.KeyLogWriter output) and counts the
// application records in written (every byte the server's tls.Conn wrote):
// records under the handshake keys do not open with the application key;
// the first that does is number 0.
func NewSealer(keylog string, suite uint16, written []byte) (*Sealer, error) {
	var secret []byte
	for line := range strings.Lines(keylog) {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "SERVER_TRAFFIC_SECRET_0" {
			var err error
			if secret, err = hex.DecodeString(f[2]); err != nil {
				return nil, err
			}
		}
	}
	if secret == nil {
		return nil, errors.New("no SERVER_TRAFFIC_SECRET_0 in the key log")
	}
	var h func() hash.Hash
	var keyLen int
	switch suite {
	case tls.TLS_AES_128_GCM_SHA256:
		h, keyLen = sha256.New, 16
	case tls.TLS_AES_256_GCM_SHA384:
		h, keyLen = sha512.New384, 32
	default:
		return nil, fmt.Errorf("cipher suite %s: the sealer knows only AES-GCM", tls.CipherSuiteName(suite))
	}
	key, err := expandLabel(h, secret, "key", keyLen)
	if err != nil {
		return nil, err
	}
	iv, err := expandLabel(h, secret, "iv", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	s := &Sealer{aead: aead, iv: iv}
	started := false
	for len(written) > 0 {
		if len(written) < 5 {
			return nil, errors.New("a partial record header in what the server wrote")
		}
		n := 5 + int(binary.BigEndian.Uint16(written[3:5]))
		if len(written) < n {
			return nil, errors.New("a partial record in what the server wrote")
		}
		rec := written[:n]
		written = written[n:]
		if rec[0] != TypeApplicationData {
			continue // ServerHello, ChangeCipherSpec: in clear
		}
		if _, err := s.aead.Open(nil, s.nonce(), rec[5:], rec[:5]); err != nil {
			if started {
				return nil, fmt.Errorf("application record %d does not open: %v", s.seq, err)
			}
			continue // under the handshake keys
		}
		started = true
		s.seq++
	}
	if !started {
		return nil, errors.New("no application record in what the server wrote")
	}
	return s, nil
}

// expandLabel is HKDF-Expand-Label with an empty context (RFC 8446,
// section 7.1).
func expandLabel(h func() hash.Hash, secret []byte, label string, n int) ([]byte, error) {
	full := "tls13 " + label
	info := []byte{byte(n >> 8), byte(n), byte(len(full))}
	info = append(info, full...)
	info = append(info, 0)
	return hkdf.Expand(h, secret, string(info), n)
}

func (s *Sealer) nonce() []byte {
	nonce := append([]byte(nil), s.iv...)
	for i := range 8 {
		nonce[len(nonce)-1-i] ^= byte(s.seq >> (8 * i))
	}
	return nonce
}

// Seal returns one record carrying content of type typ, and counts it.
func (s *Sealer) Seal(typ byte, content []byte) []byte {
	inner := append(append([]byte(nil), content...), typ)
	n := len(inner) + s.aead.Overhead()
	hdr := []byte{TypeApplicationData, 3, 3, byte(n >> 8), byte(n)}
	rec := s.aead.Seal(hdr, s.nonce(), inner, hdr)
	s.seq++
	return rec
}

// NewSessionTicket is a TLS 1.3 NewSessionTicket handshake message
// (RFC 8446, section 4.6.1): an hour's lifetime, no nonce, a 16-byte
// ticket, no extensions.
func NewSessionTicket() []byte {
	body := []byte{0, 0, 0x0e, 0x10} // ticket_lifetime: 3600 s
	body = append(body, 0, 0, 0, 0)  // ticket_age_add
	body = append(body, 0)           // ticket_nonce: empty
	body = append(body, 0, 16)       // ticket
	body = append(body, "0123456789abcdef"...)
	body = append(body, 0, 0)                                  // extensions: none
	msg := []byte{4, 0, byte(len(body) >> 8), byte(len(body))} // new_session_ticket, uint24 length
	return append(msg, body...)
}
