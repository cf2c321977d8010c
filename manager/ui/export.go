package ui

import (
	"bytes"
	"html/template"
	"io"
	"time"

	"vibebrowser/manager/api"
)

// exportTemplate draws the exported timeline: templates/export.html around the task page's own steps.
var exportTemplate = template.Must(template.New("export.html").Funcs(funcs).ParseFS(templateFS,
	"templates/export.html", "templates/steps.html"))

// exportCSS is the UI's stylesheet, inline in every export.
var exportCSS = func() template.CSS {
	b, err := assetFS.ReadFile("assets/ui.css")
	if err != nil {
		panic(err) // the embedded tree is part of the binary: a broken one is a build bug
	}
	return template.CSS(b)
}()

// exportPage is the export's data: the task page's, with the stylesheet and when it was written.
type exportPage struct {
	taskPage
	CSS      template.CSS
	Exported string
	Count    string // "14 steps", a call's shots in its card
}

// Export writes tl as one self-contained HTML file (SPEC §15): styles inline, shots inline as data: URLs,
// no script, no link that needs the network; shot returns a shot entry's JPEG (an error: the shot is left out, said so).
func Export(w io.Writer, tl api.Timeline, shot func(seq int64) ([]byte, error)) error {
	// An export is read after the fact: it tells the steps recorded when it was written, none to come.
	tl.Live = false
	p := basePage(tl)
	p.modeFacts(tl)
	p.Steps = stepBuilder{task: p.ID, mode: tl.Mode, export: true, shot: shot}.steps(tl.Entries)
	page := exportPage{taskPage: p, CSS: exportCSS, Exported: time.Now().Local().Format("Jan 2 2006 15:04:05 MST"),
		Count: plural(len(p.Steps), "step")}
	var buf bytes.Buffer
	if err := exportTemplate.ExecuteTemplate(&buf, "export.html", page); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
