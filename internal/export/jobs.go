package export

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Exports of a running instance (serve's POST /v1/exports): a Jobs runs
// one export at a time, in the background, into a directory under its
// root, and keeps the newest jobs' states for GET /v1/exports/{id}.

// Request is what an export of a running instance is asked to do.
type Request struct {
	// Dir is the directory under the instance's export root to write the
	// part into: one name, as a part's ([A-Za-z0-9._-], 1 to 64 bytes).
	Dir string `json:"dir"`
	// Part names the part (default "part-0"; give each owner its own).
	Part string `json:"part,omitempty"`
	// AtOffsets is the cut to export at (nil: the newest batch applied).
	// A running instance that has not reached it waits, up to Wait.
	AtOffsets []Offset `json:"at_offsets,omitempty"`
	// Wait bounds the wait for the cut (a Go duration; default 10m, at
	// most 24h).
	Wait string `json:"wait,omitempty"`
	// RowGroupRows as Options' (0: DefaultRowGroupRows).
	RowGroupRows int `json:"row_group_rows,omitempty"`
}

// DefaultWait is Request.Wait's default.
const DefaultWait = 10 * time.Minute

// RequestError is a request that cannot run (the API's 400).
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }

// ErrBusy is Start's error while an export runs (the API's 409).
var ErrBusy = errors.New("export: an export is running; one runs at a time (GET /v1/exports says which)")

// check checks r and fills in its defaults; wait is its Wait.
func (r *Request) check() (wait time.Duration, err error) {
	bad := func(format string, a ...any) (time.Duration, error) {
		return 0, &RequestError{fmt.Sprintf(format, a...)}
	}
	if err := CheckPart(r.Dir); err != nil {
		return bad("dir: a directory under serve's --export-dir, named as a part is: %v", err)
	}
	if r.Part == "" {
		r.Part = "part-0"
	}
	if err := CheckPart(r.Part); err != nil {
		return bad("%v", err)
	}
	if r.RowGroupRows < 0 || r.RowGroupRows > 1<<24 {
		return bad("row_group_rows must be between 1 and %d, got %d", 1<<24, r.RowGroupRows)
	}
	wait = DefaultWait
	if r.Wait != "" {
		if wait, err = time.ParseDuration(r.Wait); err != nil || wait <= 0 || wait > 24*time.Hour {
			return bad("wait must be a duration above 0 and at most 24h, got %q", r.Wait)
		}
	}
	if r.AtOffsets != nil {
		if r.AtOffsets, err = CheckCut(r.AtOffsets); err != nil {
			return bad("at_offsets: %v", err)
		}
	}
	return wait, nil
}

// Job is an export's state.
type Job struct {
	ID      string  `json:"id"`
	Request Request `json:"request"`
	// State: waiting (for the instance to reach the cut), running, done,
	// failed or canceled.
	State string `json:"state"`
	// Edges, Vertices and Bytes written so far.
	Edges    int64     `json:"edges"`
	Vertices int64     `json:"vertices"`
	Bytes    int64     `json:"bytes"`
	Error    string    `json:"error,omitempty"`
	Manifest *Manifest `json:"manifest,omitempty"`
	Started  time.Time `json:"started"`
	// Finished is when it ended (nil: it has not).
	Finished *time.Time `json:"finished,omitempty"`
}

// Snapshotter takes the snapshot an export writes, with the Kafka
// position it is as of, at cut when cut is not nil (waiting until ctx
// ends for the instance to reach it). release gives the snapshot back.
type Snapshotter func(ctx context.Context, cut []Offset) (src Source, pos []Offset, release func(), err error)

// Jobs runs the exports of a running instance.
type Jobs struct {
	root  string
	graph string
	snap  Snapshotter

	mu sync.Mutex
	// jobs are the newest keptJobs jobs, oldest first; running is the one
	// that runs (nil: none). Protected by mu.
	// INVARIANT: at most one job runs.
	jobs    []*Job
	running *Job
	next    int
	cancel  context.CancelFunc
	// done is closed when the running job ends. Protected by mu.
	done chan struct{}
	wg   sync.WaitGroup
}

// keptJobs is how many jobs Jobs remembers.
const keptJobs = 16

// NewJobs runs exports into directories under root, of graph, taking
// their snapshots from snap.
func NewJobs(root, graph string, snap Snapshotter) *Jobs {
	return &Jobs{root: root, graph: graph, snap: snap}
}

// Start starts an export of r in the background and returns its job:
// ErrBusy while another runs, a *RequestError for a bad request.
func (j *Jobs) Start(r Request) (Job, error) {
	wait, err := r.check()
	if err != nil {
		return Job{}, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.running != nil {
		return Job{}, ErrBusy
	}
	j.next++
	job := &Job{ID: strconv.Itoa(j.next), Request: r, State: "running", Started: time.Now().UTC()}
	if r.AtOffsets != nil {
		job.State = "waiting"
	}
	if len(j.jobs) == keptJobs {
		j.jobs = append(j.jobs[:0], j.jobs[1:]...)
	}
	j.jobs = append(j.jobs, job)
	j.running = job
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	j.cancel, j.done = cancel, done
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		defer close(done)
		defer cancel()
		m, err := j.run(ctx, job, wait)
		j.mu.Lock()
		defer j.mu.Unlock()
		now := time.Now().UTC()
		job.Finished, job.Manifest, job.State = &now, m, "done"
		switch {
		case err != nil && ctx.Err() != nil:
			job.State, job.Error = "canceled", "canceled (DELETE /v1/exports/"+job.ID+", or serve stopping)"
		case err != nil:
			job.State, job.Error = "failed", err.Error()
		}
		j.running = nil
	}()
	return *job, nil
}

// run runs job: the snapshot (at the cut, waiting at most wait for it),
// then the part.
func (j *Jobs) run(ctx context.Context, job *Job, wait time.Duration) (*Manifest, error) {
	r := job.Request
	cut := r.AtOffsets
	wctx, wcancel := context.WithTimeout(ctx, wait)
	src, pos, release, err := j.snap(wctx, cut)
	wcancel()
	if err != nil {
		return nil, err
	}
	defer release()
	j.mu.Lock()
	job.State = "running"
	j.mu.Unlock()
	o := Options{Part: r.Part, Graph: j.graph, Position: pos, Cut: cut, RowGroupRows: r.RowGroupRows,
		Progress: func(p Progress) {
			j.mu.Lock()
			job.Edges, job.Vertices, job.Bytes = p.Edges, p.Vertices, p.Bytes
			j.mu.Unlock()
		}}
	return Write(ctx, src, filepath.Join(j.root, r.Dir), o)
}

// Job returns the job of id, if it is kept.
func (j *Jobs) Job(id string) (Job, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, job := range j.jobs {
		if job.ID == id {
			return *job, true
		}
	}
	return Job{}, false
}

// List returns the kept jobs, newest first.
func (j *Jobs) List() []Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Job, 0, len(j.jobs))
	for i := len(j.jobs) - 1; i >= 0; i-- {
		out = append(out, *j.jobs[i])
	}
	return out
}

// ErrEnded is Cancel's error for an export that is not running.
var ErrEnded = errors.New("export: it has ended")

// Cancel cancels the running export id and returns its job once it has
// ended: its part's files are removed. ok is false when no export id is
// kept; ErrEnded when it is not running.
func (j *Jobs) Cancel(id string) (Job, bool, error) {
	j.mu.Lock()
	var found *Job
	for _, job := range j.jobs {
		if job.ID == id {
			found = job
		}
	}
	if found == nil || found != j.running {
		j.mu.Unlock()
		if found == nil {
			return Job{}, false, nil
		}
		return j.jobCopy(found), true, ErrEnded
	}
	cancel, done := j.cancel, j.done
	j.mu.Unlock()
	cancel()
	<-done
	j.mu.Lock()
	defer j.mu.Unlock()
	return *found, true, nil
}

// jobCopy copies job under mu.
func (j *Jobs) jobCopy(job *Job) Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	return *job
}

// Close cancels the running export, if any, and waits for it to end.
func (j *Jobs) Close() {
	j.mu.Lock()
	if j.cancel != nil {
		j.cancel()
	}
	j.mu.Unlock()
	j.wg.Wait()
}
