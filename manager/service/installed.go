package service

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Unit is a service file install wrote, as read back from disk.
type Unit struct {
	Path string // the file
	Exe  string // the vibe-browser binary it runs
	Home string // the --home it passes
	// Enabled: systemd has an enable link to it (…target.wants); a launchd agent always is, it loads at login.
	Enabled bool
}

// Installed reads the service file install writes (the user one with user), or an error wrapping
// fs.ErrNotExist when there is none.
func Installed(user bool) (Unit, error) { return installed(runtime.GOOS, user) }

func installed(goos string, user bool) (Unit, error) {
	path, err := unitPath(goos, user)
	if err != nil {
		return Unit{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Unit{}, fmt.Errorf("service: %w", err)
	}
	u := Unit{Path: path, Enabled: goos == "darwin" || len(enableLinks(path)) > 0}
	var args []string
	if goos == "darwin" {
		args, err = plistArguments(string(data))
	} else {
		args, err = execStart(string(data))
	}
	if err != nil {
		return u, fmt.Errorf("service %s: %w", path, err)
	}
	u.Exe = args[0]
	for i, a := range args[:len(args)-1] {
		if a == "--home" {
			u.Home = args[i+1]
		}
	}
	return u, nil
}

// enableLinks are the links systemctl enable made to the unit at path, the ones uninstall removes.
func enableLinks(path string) []string {
	var links []string
	for _, target := range []string{"default.target", "multi-user.target"} {
		link := filepath.Join(filepath.Dir(path), target+".wants", UnitName)
		if dest, err := os.Readlink(link); err == nil && dest == path {
			links = append(links, link)
		}
	}
	return links
}

// execStart returns the words of a unit's ExecStart line.
func execStart(unit string) ([]string, error) {
	for _, line := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			words, err := splitSystemdWords(v, true)
			if err == nil && len(words) == 0 {
				err = errors.New("empty ExecStart")
			}
			return words, err
		}
	}
	return nil, errors.New("no ExecStart line")
}

// splitSystemdWords decodes a unit file value the way systemd does for ExecStart (exec) and Environment: '%%'
// specifiers first, then words split on blanks with double quotes removed and C escapes undone, then (exec
// arguments only, not the executable) '$$' for a literal '$'. It undoes what SystemdUnit encodes.
func splitSystemdWords(value string, exec bool) ([]string, error) {
	value = strings.ReplaceAll(value, "%%", "%")
	var words []string
	for i := 0; i < len(value); {
		if value[i] == ' ' {
			i++
			continue
		}
		var w strings.Builder
		if value[i] != '"' {
			for ; i < len(value) && value[i] != ' '; i++ {
				w.WriteByte(value[i])
			}
		} else {
			i++
			for ; ; i++ {
				if i >= len(value) {
					return nil, fmt.Errorf("unbalanced quotes in %q", value)
				}
				c := value[i]
				if c == '"' {
					i++
					break
				}
				if c != '\\' {
					w.WriteByte(c)
					continue
				}
				if i++; i >= len(value) {
					return nil, fmt.Errorf("a backslash ends %q", value)
				}
				switch value[i] {
				case 'n':
					w.WriteByte('\n')
				case 't':
					w.WriteByte('\t')
				case 'x':
					if i+3 > len(value) {
						return nil, fmt.Errorf("bad \\x escape in %q", value)
					}
					n, err := strconv.ParseUint(value[i+1:i+3], 16, 8)
					if err != nil {
						return nil, fmt.Errorf("bad \\x escape in %q", value)
					}
					w.WriteByte(byte(n))
					i += 2
				default:
					w.WriteByte(value[i])
				}
			}
		}
		s := w.String()
		if exec && len(words) > 0 {
			s = strings.ReplaceAll(s, "$$", "$")
		}
		words = append(words, s)
	}
	return words, nil
}

// plistArguments returns the ProgramArguments strings of a launchd plist.
func plistArguments(doc string) ([]string, error) {
	d := xml.NewDecoder(strings.NewReader(doc))
	var key string
	var args []string
	inArgs := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("plist: %w", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			switch {
			case tok.Name.Local == "key":
				if err := d.DecodeElement(&key, &tok); err != nil {
					return nil, fmt.Errorf("plist: %w", err)
				}
			case tok.Name.Local == "array" && key == "ProgramArguments":
				inArgs = true
			case tok.Name.Local == "string" && inArgs:
				var s string
				if err := d.DecodeElement(&s, &tok); err != nil {
					return nil, fmt.Errorf("plist: %w", err)
				}
				args = append(args, s)
			}
		case xml.EndElement:
			if tok.Name.Local == "array" && inArgs {
				if len(args) == 0 {
					return nil, errors.New("plist: empty ProgramArguments")
				}
				return args, nil
			}
		}
	}
	return nil, errors.New("plist: no ProgramArguments")
}
