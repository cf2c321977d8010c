package ziniao

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Client defaults.
const (
	DefaultPort = 16851
	DefaultHost = "127.0.0.1"
	// defaultHTTPTimeout bounds one request of the default HTTP client. startBrowser can take tens of
	// seconds on a real client (it may fetch a browser core first), so this is generous; callers bound
	// their calls with ctx as well.
	defaultHTTPTimeout = 2 * time.Minute
	// pingBound bounds Ping when ctx has no earlier deadline: a running client answers getBrowserList at once.
	pingBound = 5 * time.Second
	// maxResponse caps a response body; a browser list of thousands of stores is still far below it.
	maxResponse = 16 << 20
)

// Status codes the package interprets. statusCode is compared as a string: the client sends it as a
// string or as a number depending on version.
const (
	statusOK                  = "0"
	statusWebDriverNotEnabled = "-10003"
)

// ErrWebDriverNotEnabled is the class of an *APIError with statusCode -10003: the account's BOSS has not
// enabled WebDriver, so the client refuses to start environments for automation. Start's *StartError
// unwraps to it; the manager maps this to 502 start failed, its message saying the fix.
var ErrWebDriverNotEnabled = errors.New("WebDriver is not enabled for this Ziniao account: the account owner (BOSS) must enable it on the Ziniao Open Platform, see https://open.ziniao.com/docSupport?docId=99")

// Account is the Ziniao login every request carries.
type Account struct {
	Company  string
	Username string
	Password string
}

// Client talks to the local HTTP API of the Ziniao client. Its zero value talks to 127.0.0.1:16851 with no
// credentials. It is safe for concurrent use: it holds no state between requests.
type Client struct {
	Port    int          // the client's --port; zero means DefaultPort
	Host    string       // where the client listens (a WSL gateway, say); empty means DefaultHost
	HTTP    *http.Client // nil means a client without keep-alives and a 2-minute timeout
	Account Account
}

// Browser is one store environment from getBrowserList.
type Browser struct {
	Oauth string          // browserOauth: the id startBrowser and stopBrowser accept
	ID    string          // browserId, as digits (the client sends it as a number)
	Name  string          // browserName
	Raw   json.RawMessage // the entry as the client sent it, for fields this package does not name
}

// UnmarshalJSON decodes a browserList entry, accepting browserId as a number or a string.
func (b *Browser) UnmarshalJSON(data []byte) error {
	var v struct {
		Oauth string      `json:"browserOauth"`
		ID    json.Number `json:"browserId"`
		Name  string      `json:"browserName"`
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		var s struct {
			ID string `json:"browserId"`
		}
		if json.Unmarshal(data, &s) != nil {
			return err
		}
		v.ID = json.Number(s.ID)
	}
	*b = Browser{Oauth: v.Oauth, ID: v.ID.String(), Name: v.Name, Raw: append(json.RawMessage(nil), data...)}
	return nil
}

// Started is what startBrowser returns for a launched environment.
type Started struct {
	DebuggingPort int    // the environment's CDP port, random per launch
	UserData      string // the environment's user-data directory on the client's machine
}

// APIError is a response whose statusCode is not "0".
type APIError struct {
	Action     string
	StatusCode string
	Message    string
}

func (e *APIError) Error() string {
	if e.StatusCode == statusWebDriverNotEnabled {
		return fmt.Sprintf("ziniao %s: statusCode %s: %v", e.Action, e.StatusCode, ErrWebDriverNotEnabled)
	}
	msg := e.Message
	if msg == "" {
		msg = "no message"
	}
	return fmt.Sprintf("ziniao %s: statusCode %s: %s", e.Action, e.StatusCode, msg)
}

// Is reports statusCode -10003 as ErrWebDriverNotEnabled.
func (e *APIError) Is(target error) bool {
	return target == ErrWebDriverNotEnabled && e.StatusCode == statusWebDriverNotEnabled
}

// BrowserList returns the account's store environments (action getBrowserList).
func (c *Client) BrowserList(ctx context.Context) ([]Browser, error) {
	var resp struct {
		BrowserList []Browser `json:"browserList"`
	}
	if err := c.call(ctx, "getBrowserList", nil, &resp); err != nil {
		return nil, err
	}
	return resp.BrowserList, nil
}

// Ping checks that the client is running, speaks the HTTP API and accepts the account (getBrowserList, the
// cheapest action). It is bounded by 5 s when ctx has no earlier deadline.
func (c *Client) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingBound)
	defer cancel()
	return c.call(ctx, "getBrowserList", nil, nil)
}

// StartBrowser starts (or, when it is open, replaces: the old port dies) the environment of browser, an
// oauth id or an all-digits browserId, headful, without waiting for plugin updates and with downloads not
// prompted (action startBrowser). It does not wait for readiness: see Start.
func (c *Client) StartBrowser(ctx context.Context, browser string) (Started, error) {
	if browser == "" {
		return Started{}, errors.New("ziniao startBrowser: no browser id")
	}
	fields := browserField(browser)
	for k, v := range map[string]any{
		"isHeadless":              0,
		"isWaitPluginUpdate":      0,
		"isWebDriverReadOnlyMode": 0,
		"cookieTypeLoad":          0,
		"cookieTypeSave":          0,
		"runMode":                 "1",
		"isLoadUserPlugin":        false,
		"pluginIdType":            1,
		"privacyMode":             0,
		"notPromptForDownload":    1,
	} {
		fields[k] = v
	}
	var resp struct {
		DebuggingPort json.RawMessage `json:"debuggingPort"`
		UserData      string          `json:"userData"`
	}
	if err := c.call(ctx, "startBrowser", fields, &resp); err != nil {
		return Started{}, err
	}
	port, err := strconv.Atoi(unquote(resp.DebuggingPort))
	if err != nil || port <= 0 || port > 65535 {
		return Started{}, fmt.Errorf("ziniao startBrowser %s: bad debuggingPort %s", browser, resp.DebuggingPort)
	}
	return Started{DebuggingPort: port, UserData: resp.UserData}, nil
}

// StopBrowser closes the environment of browser (action stopBrowser; closeBrowser does not exist).
func (c *Client) StopBrowser(ctx context.Context, browser string) error {
	if browser == "" {
		return errors.New("ziniao stopBrowser: no browser id")
	}
	return c.call(ctx, "stopBrowser", browserField(browser), nil)
}

// browserField names browser as browserId when it is all digits, else as browserOauth.
func browserField(browser string) map[string]any {
	for _, r := range browser {
		if r < '0' || r > '9' {
			return map[string]any{"browserOauth": browser}
		}
	}
	return map[string]any{"browserId": browser}
}

func (c *Client) addr() string {
	host, port := c.Host, c.Port
	if host == "" {
		host = DefaultHost
	}
	if port == 0 {
		port = DefaultPort
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func (c *Client) host() string {
	if c.Host == "" {
		return DefaultHost
	}
	return c.Host
}

// defaultHTTP has no keep-alives: requests are rare, and no idle connection (or its goroutines) outlives
// a call. Proxy is nil: the client is local, never behind HTTP_PROXY.
var defaultHTTP = &http.Client{
	Timeout:   defaultHTTPTimeout,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
}

// call POSTs action with the account and a fresh requestId plus fields, checks statusCode and decodes the
// response into out (when not nil).
func (c *Client) call(ctx context.Context, action string, fields map[string]any, out any) error {
	body := map[string]any{
		"company":   c.Account.Company,
		"username":  c.Account.Username,
		"password":  c.Account.Password,
		"action":    action,
		"requestId": requestID(),
	}
	for k, v := range fields {
		body[k] = v
	}
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("ziniao %s: %w", action, err)
	}
	url := "http://" + c.addr() + "/"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("ziniao %s: %w", action, err)
	}
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("ziniao %s: %w", action, ctx.Err())
		}
		return fmt.Errorf("ziniao %s: is the Ziniao client running in WebDriver mode (--run_type=web_driver --ipc_type=http --port=%d)? %w", action, c.portOrDefault(), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("ziniao %s: read response: %w", action, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ziniao %s: HTTP %s: %s", action, resp.Status, snippet(raw))
	}
	var st struct {
		StatusCode json.RawMessage `json:"statusCode"`
		Err        string          `json:"err"`
		Msg        string          `json:"msg"`
		Message    string          `json:"message"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("ziniao %s: bad response %s: %w", action, snippet(raw), err)
	}
	if len(st.StatusCode) == 0 {
		return fmt.Errorf("ziniao %s: response without statusCode: %s", action, snippet(raw))
	}
	if code := unquote(st.StatusCode); code != statusOK {
		return &APIError{Action: action, StatusCode: code, Message: firstNonEmpty(st.Err, st.Msg, st.Message)}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("ziniao %s: bad response %s: %w", action, snippet(raw), err)
		}
	}
	return nil
}

func (c *Client) portOrDefault() int {
	if c.Port == 0 {
		return DefaultPort
	}
	return c.Port
}

// unquote returns a JSON string's contents, or a JSON number's text.
func unquote(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// snippet shortens a response body for an error message.
func snippet(b []byte) string {
	const n = 200
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// requestID returns a random UUID-formatted id, as the client's own SDK sends.
func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
