package api

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/graphtide/graphtide/internal/export"
	"github.com/graphtide/graphtide/internal/progress"
)

// StartExport starts an export (POST /v1/exports) and returns its job.
func (c *Client) StartExport(ctx context.Context, r export.Request) (export.Job, error) {
	var j export.Job
	return j, c.do(ctx, "POST", "/v1/exports", nil, r, &j)
}

// Export returns an export's job (GET /v1/exports/{id}).
func (c *Client) Export(ctx context.Context, id string) (export.Job, error) {
	var j export.Job
	return j, c.do(ctx, "GET", "/v1/exports/"+id, nil, nil, &j)
}

// exportPollEvery is how often RunExport asks how an export is doing.
const exportPollEvery = 200 * time.Millisecond

// RunExport starts an export and follows it to its end, drawing its
// progress on w (package progress), and returns its manifest, or why it
// failed. When ctx ends first, the export is canceled on the server.
func (c *Client) RunExport(ctx context.Context, r export.Request, w io.Writer) (*export.Manifest, error) {
	j, err := c.StartExport(ctx, r)
	if err != nil {
		return nil, err
	}
	bar := progress.New(w, progress.IsTerminal(w), "export", "rows", "", 0, progress.Every, time.Now())
	polls := 0
	for j.State == "waiting" || j.State == "running" {
		if j.State == "waiting" && polls == 1 {
			fmt.Fprintf(w, "export %s: waiting for the instance to reach the cut (at most %s)\n", j.ID, cmp.Or(r.Wait, export.DefaultWait.String()))
		}
		polls++
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.do(cctx, "DELETE", "/v1/exports/"+j.ID, nil, nil, nil); err != nil {
				return nil, fmt.Errorf("export %s: %w; canceling it on the server failed: %w", j.ID, ctx.Err(), err)
			}
			return nil, fmt.Errorf("export %s canceled on the server: %w", j.ID, ctx.Err())
		case <-time.After(exportPollEvery):
		}
		if j, err = c.Export(ctx, j.ID); err != nil {
			return nil, err
		}
		if j.State != "waiting" {
			bar.Update(j.Edges+j.Vertices, j.Edges+j.Vertices)
		}
	}
	bar.Finish(j.Edges+j.Vertices, j.Edges+j.Vertices)
	if j.State != "done" {
		return nil, fmt.Errorf("export %s %s: %s", j.ID, j.State, j.Error)
	}
	return j.Manifest, nil
}
