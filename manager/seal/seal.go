// Package seal encrypts a store's login files (cookie checkpoints, profile snapshots) with XChaCha20-Poly1305
// under the home's snapshot key (a cluster's secret, SPEC §19), so that a copy of them elsewhere reveals nothing
// (SPEC §18).
package seal

import (
	"bufio"
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
)

// A sealed file is the magic, a random 16-byte nonce prefix, then chunks of at most chunkSize plaintext
// bytes, each sealed on its own (the STREAM construction, as age and Tink use it): chunk i's nonce is the
// prefix, i as 7 big-endian bytes, and a byte that is 1 on the last chunk only, so chunks cannot be
// reordered, dropped or cut off at a chunk boundary. Every chunk's additional data is the file's purpose
// (say "jar:shop-a"), so one store's file is refused as another's, or a checkpoint as a snapshot.
const (
	magic     = "vibe-sealed/1\n"
	chunkSize = 64 << 10
	prefixLen = chacha20poly1305.NonceSizeX - 8
	maxChunks = 1<<56 - 1
)

// KeyFile is the key's file in a home when VIBE_SNAPSHOT_KEY gives none.
const KeyFile = "snapshot.key"

// ErrOpen is the class of every failure to open a sealed file: a wrong key, another purpose, a file cut
// short, altered or not sealed at all.
var ErrOpen = errors.New("not a sealed file of this key and purpose")

// Key seals and opens files. Its zero value is not usable; see LoadKey and NewKey.
type Key struct {
	aead cipher.AEAD
	also []cipher.AEAD // keys that open what was sealed before this one sealed (OpeningAlso); never seal
}

// NewKey is the key of 32 raw bytes.
func NewKey(raw []byte) (*Key, error) {
	aead, err := chacha20poly1305.NewX(raw)
	if err != nil {
		return nil, fmt.Errorf("snapshot key: %w", err)
	}
	return &Key{aead: aead}, nil
}

// ParseKey reads a key written as 64 hex digits or as the standard base64 of 32 bytes.
func ParseKey(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	if raw, err := hex.DecodeString(s); err == nil && len(raw) == chacha20poly1305.KeySize {
		return NewKey(raw)
	}
	if raw, err := base64.StdEncoding.DecodeString(s); err == nil && len(raw) == chacha20poly1305.KeySize {
		return NewKey(raw)
	}
	return nil, errors.New("a snapshot key is 32 bytes written as 64 hex digits or as standard base64 " +
		"(make one with: head -c 32 /dev/urandom | base64)")
}

// LoadKey is the home's key: env (VIBE_SNAPSHOT_KEY) when it is set, else the key in home/snapshot.key,
// which is made (32 random bytes, hex, 0600) when it does not exist yet.
func LoadKey(home, env string) (*Key, error) {
	if env != "" {
		k, err := ParseKey(env)
		if err != nil {
			return nil, fmt.Errorf("VIBE_SNAPSHOT_KEY: %w", err)
		}
		return k, nil
	}
	path := filepath.Join(home, KeyFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return makeKeyFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read the snapshot key: %w", err)
	}
	k, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// makeKeyFile writes a new random key to path, exclusively: when another process made it first, its key
// is the one read.
func makeKeyFile(path string) (*Key, error) {
	raw := make([]byte, chacha20poly1305.KeySize)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return LoadKey(filepath.Dir(path), "")
	}
	if err != nil {
		return nil, fmt.Errorf("make the snapshot key: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(raw) + "\n")
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("make the snapshot key: %w", err)
	}
	return NewKey(raw)
}

// OpeningAlso is k, which also opens what others sealed: a cluster's hosts seal with the cluster's secret
// (SPEC §19), and a file a host sealed with its home's key before it joined still opens. Only k seals.
func (k *Key) OpeningAlso(others ...*Key) *Key {
	out := &Key{aead: k.aead, also: slices.Clone(k.also)}
	for _, o := range others {
		out.also = append(append(out.also, o.aead), o.also...)
	}
	return out
}

// Seal is plain sealed for purpose.
func (k *Key) Seal(plain []byte, purpose string) []byte {
	var buf bytes.Buffer
	w, _ := k.NewWriter(&buf, purpose) // a bytes.Buffer does not fail
	w.Write(plain)
	w.Close()
	return buf.Bytes()
}

// Open is sealed's plain text, when k sealed it for purpose.
func (k *Key) Open(sealed []byte, purpose string) ([]byte, error) {
	r, err := k.NewReader(bytes.NewReader(sealed), purpose)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// Writer seals what is written to it; Close seals the last chunk, and a file without it does not open.
type Writer struct {
	k       *Key
	w       io.Writer
	ad      []byte
	nonce   [chacha20poly1305.NonceSizeX]byte
	n       uint64 // chunks written
	buf     []byte // the chunk being filled; a full one is sealed only once more data shows it is not the last
	out     []byte
	err     error
	closing bool
}

// NewWriter seals into w for purpose.
func (k *Key) NewWriter(w io.Writer, purpose string) (*Writer, error) {
	sw := &Writer{k: k, w: w, ad: []byte(purpose), buf: make([]byte, 0, chunkSize)}
	if _, err := rand.Read(sw.nonce[:prefixLen]); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(w, magic); err != nil {
		return nil, err
	}
	if _, err := w.Write(sw.nonce[:prefixLen]); err != nil {
		return nil, err
	}
	return sw, nil
}

// Write seals p.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.closing {
		return 0, errors.New("seal: write after close")
	}
	n := 0
	for len(p) > 0 {
		if len(w.buf) == chunkSize {
			if w.err = w.flush(false); w.err != nil {
				return n, w.err
			}
		}
		c := copy(w.buf[len(w.buf):chunkSize], p)
		w.buf = w.buf[:len(w.buf)+c]
		p = p[c:]
		n += c
	}
	return n, nil
}

// Close seals the last chunk. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.err != nil || w.closing {
		return w.err
	}
	w.closing = true
	w.err = w.flush(true)
	return w.err
}

func (w *Writer) flush(last bool) error {
	if w.n >= maxChunks {
		return errors.New("seal: file too long")
	}
	setCounter(&w.nonce, w.n, last)
	w.out = w.k.aead.Seal(w.out[:0], w.nonce[:], w.buf, w.ad)
	w.n++
	w.buf = w.buf[:0]
	_, err := w.w.Write(w.out)
	return err
}

func setCounter(nonce *[chacha20poly1305.NonceSizeX]byte, n uint64, last bool) {
	var c [8]byte
	binary.BigEndian.PutUint64(c[:], n)
	copy(nonce[prefixLen:], c[1:])
	nonce[len(nonce)-1] = 0
	if last {
		nonce[len(nonce)-1] = 1
	}
}

// Reader opens a sealed stream; it returns ErrOpen (wrapped) for anything k did not seal for its purpose,
// including a stream cut short.
type Reader struct {
	k     *Key
	aead  cipher.AEAD // the key that opened the first chunk; nil before it
	r     *bufio.Reader
	ad    []byte
	nonce [chacha20poly1305.NonceSizeX]byte
	n     uint64
	in    []byte
	plain []byte // opened and not yet read
	done  bool
	err   error
}

// NewReader opens r, sealed for purpose.
func (k *Key) NewReader(r io.Reader, purpose string) (*Reader, error) {
	sr := &Reader{k: k, r: bufio.NewReaderSize(r, chunkSize+k.aead.Overhead()+1), ad: []byte(purpose),
		in: make([]byte, chunkSize+k.aead.Overhead())}
	head := make([]byte, len(magic)+prefixLen)
	if _, err := io.ReadFull(sr.r, head); err != nil || string(head[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w (no seal header)", ErrOpen)
	}
	copy(sr.nonce[:], head[len(magic):])
	return sr, nil
}

// Read reads the opened text.
func (r *Reader) Read(p []byte) (int, error) {
	for len(r.plain) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.done {
			return 0, io.EOF
		}
		r.err = r.next()
	}
	n := copy(p, r.plain)
	r.plain = r.plain[n:]
	return n, nil
}

func (r *Reader) next() error {
	n, err := io.ReadFull(r.r, r.in)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		r.done = true // a short chunk is the last one
	case err != nil:
		return err
	default:
		if _, perr := r.r.Peek(1); errors.Is(perr, io.EOF) {
			r.done = true
		} else if perr != nil {
			return perr
		}
	}
	if r.n >= maxChunks {
		return fmt.Errorf("%w (too long)", ErrOpen)
	}
	setCounter(&r.nonce, r.n, r.done)
	plain, oerr := r.open(n)
	if oerr != nil {
		return fmt.Errorf("%w (chunk %d)", ErrOpen, r.n)
	}
	r.n++
	r.plain = plain
	return nil
}

// open opens the chunk of n bytes in r.in: the first with whichever of the key's keys opens it, the others
// with that one only.
func (r *Reader) open(n int) ([]byte, error) {
	if r.aead != nil {
		return r.aead.Open(r.in[:0:0], r.nonce[:], r.in[:n], r.ad)
	}
	plain, err := r.k.aead.Open(r.in[:0:0], r.nonce[:], r.in[:n], r.ad)
	r.aead = r.k.aead
	for _, a := range r.k.also {
		if err == nil {
			break
		}
		plain, err = a.Open(r.in[:0:0], r.nonce[:], r.in[:n], r.ad)
		r.aead = a
	}
	return plain, err
}
