package keeper

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRelayManyMessagesAtOnce(t *testing.T) {
	h := startKeeper(t, 0)
	h.ready()
	c := h.dial()
	const n = 2000
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"id":%d,"method":"Test.echo","params":{"n":%d}}`, i+1, i)
	}
	c.write(msgs...)
	for i := range n {
		r := decodeReply(t, c.read())
		if r.ID == nil || *r.ID != int64(i+1) {
			t.Fatalf("answer %d = %+v; want id %d (in order)", i, r, i+1)
		}
		var res struct {
			Size int `json:"size"`
		}
		json.Unmarshal(r.Result, &res)
		if res.Size != len(msgs[i]) {
			t.Fatalf("the fake read %d bytes of command %d; want %d", res.Size, i+1, len(msgs[i]))
		}
	}
}

func TestRelayJoinsASplitMessage(t *testing.T) {
	h := startKeeper(t, 0)
	h.ready()
	c := h.dial()
	msg := `{"id":7,"method":"Test.echo","params":{"pad":"` + strings.Repeat("s", 1000) + `"}}` + "\x00"
	for _, part := range []string{msg[:3], msg[3:500], msg[500:]} {
		if _, err := c.nc.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // pacing the parts into separate reads, not waiting for anything
	}
	r, _ := c.until(7)
	if !strings.Contains(string(r.Result), strconv.Itoa(len(msg)-1)) {
		t.Errorf("answer = %s; want the fake to have read all %d bytes as one message", r.Result, len(msg)-1)
	}
}

func TestRelayBrowserToClient(t *testing.T) {
	h := startKeeper(t, 0)
	h.ready()
	c := h.dial()
	t.Run("many events at once", func(t *testing.T) {
		const n = 3000
		c.write(fmt.Sprintf(`{"id":1,"method":"Test.events","params":{"count":%d,"size":200}}`, n))
		_, before := c.until(1)
		if len(before) != n {
			t.Fatalf("%d events before the answer; want %d", len(before), n)
		}
		for i, e := range before {
			var p struct {
				N int `json:"n"`
			}
			json.Unmarshal(e.Params, &p)
			if e.Method != "Test.event" || p.N != i {
				t.Fatalf("event %d = %s %s; want Test.event n=%d", i, e.Method, e.Params, i)
			}
		}
	})
	for _, size := range []int{3 << 20, 9 << 20, 1 << 20} { // beside, over and under the reader's kept scratch
		t.Run(fmt.Sprintf("an answer of %d bytes", size), func(t *testing.T) {
			r := c.call(int64(size), "Test.big", fmt.Sprintf(`{"size":%d}`, size))
			var res struct {
				Data string `json:"data"`
			}
			if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Data) != size || strings.Trim(res.Data, "b") != "" {
				t.Errorf("Test.big answer: %d bytes of data, %v; want %d", len(res.Data), err, size)
			}
		})
	}
	t.Run("a large command", func(t *testing.T) {
		msg := `{"id":5,"method":"Test.echo","params":{"pad":"` + strings.Repeat("c", 3<<20) + `"}}`
		c.write(msg)
		r, _ := c.until(5)
		if !strings.Contains(string(r.Result), strconv.Itoa(len(msg))) {
			t.Errorf("answer = %s; want the fake to have read %d bytes", r.Result, len(msg))
		}
	})
}

func TestClientMessageLimit(t *testing.T) {
	const limit = 1000
	h := startKeeper(t, limit)
	h.ready()
	c := h.dial()
	padded := func(id int, method string, size int) string {
		head := fmt.Sprintf(`{"id":%d,"method":"%s","params":{"pad":"`, id, method)
		return head + strings.Repeat("p", size-len(head)-len(`"}}`)) + `"}}`
	}
	at := padded(1, "Test.echo", limit)
	c.write(at)
	if r, _ := c.until(1); r.Error != nil || !strings.Contains(string(r.Result), strconv.Itoa(limit)) {
		t.Errorf("a message at the limit: %+v %s; want it answered by the browser", r.Error, r.Result)
	}

	c.write(padded(2, "Test.over", limit+1))
	r, _ := c.until(2)
	if r.Error == nil || !strings.Contains(r.Error.Message, strconv.Itoa(limit)+" bytes") {
		t.Fatalf("a message over the limit: %+v; want an error naming the limit of %d bytes", r, limit)
	}

	// No id: nothing to answer; the message is dropped and the connection lives on.
	c.write(`{"method":"Test.over","params":{"pad":"` + strings.Repeat("q", limit) + `"}}`)
	if r := c.call(3, "Test.echo", ""); r.Error != nil {
		t.Errorf("after refusals: %+v; want the pipe to live on", r.Error)
	}
	if h.sawLine("Test.over") {
		t.Errorf("the fake read an over-limit message: %q", h.sent())
	}
}

// TestClientCommandShapes: a command's id is found whatever the order of its keys, so its answer reaches it.
func TestClientCommandShapes(t *testing.T) {
	h := startKeeper(t, 0)
	h.ready()
	c := h.dial()
	tests := []struct {
		name string
		msg  string
		id   int64
	}{
		{"id first", `{"id":11,"method":"Test.echo","params":{}}`, 11},
		{"method first", `{"method":"Test.echo","id":12,"params":{}}`, 12},
		{"method first, ends in a sessionId", `{"method":"Test.echo","id":13,"params":{},"sessionId":"X"}`, 13},
		{"session first", `{"sessionId":"X","method":"Test.echo","params":{},"id":14}`, 14},
		{"spaces", `{ "id" : 15 , "method" : "Test.echo" }`, 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.write(tt.msg)
			if r, _ := c.until(tt.id); r.Error != nil || r.Result == nil {
				t.Errorf("answer to %s = %+v; want the fake's", tt.msg, r)
			}
		})
	}
}
