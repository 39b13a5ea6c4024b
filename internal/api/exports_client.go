package api

import (
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
// failed.
func (c *Client) RunExport(ctx context.Context, r export.Request, w io.Writer) (*export.Manifest, error) {
	j, err := c.StartExport(ctx, r)
	if err != nil {
		return nil, err
	}
	bar := progress.New(w, progress.IsTerminal(w), "export", "rows", "", 0, progress.Every, time.Now())
	for j.State == "waiting" || j.State == "running" {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("export %s on the server goes on: %w", j.ID, ctx.Err())
		case <-time.After(exportPollEvery):
		}
		if j, err = c.Export(ctx, j.ID); err != nil {
			return nil, err
		}
		bar.Update(j.Edges+j.Vertices, j.Edges+j.Vertices)
	}
	bar.Finish(j.Edges+j.Vertices, j.Edges+j.Vertices)
	if j.State != "done" {
		return nil, fmt.Errorf("export %s failed: %s", j.ID, j.Error)
	}
	return j.Manifest, nil
}
