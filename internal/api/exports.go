package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/graphtide/graphtide/internal/export"
)

// Exporter runs exports of the instance as Parquet (serve --export-dir:
// *export.Jobs).
type Exporter interface {
	Start(export.Request) (export.Job, error)
	Job(id string) (export.Job, bool)
	List() []export.Job
	Cancel(id string) (export.Job, bool, error)
}

// ExportList answers GET /v1/exports.
type ExportList struct {
	Exports []export.Job `json:"exports"`
}

// exporter is the Exporter, or the 404 that says how to turn exports on.
func (s *Server) exporter() (Exporter, error) {
	if s.cfg.Exports == nil {
		return nil, errorf(http.StatusNotFound, "exports are off: serve writes them under --export-dir, which is not set")
	}
	return s.cfg.Exports, nil
}

// startExport is POST /v1/exports: 202 with the job, which runs in the
// background (GET /v1/exports/{id} follows it).
func (s *Server) startExport(w http.ResponseWriter, r *http.Request) error {
	if _, err := params(r); err != nil {
		return err
	}
	ex, err := s.exporter()
	if err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.Limits.MaxBodyBytes))
	if err != nil {
		return err
	}
	var req export.Request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return errorf(http.StatusBadRequest, `body must be one export as a JSON object {"dir": ..., "part": ..., "at_offsets": [...]}: %v`, err)
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, "body must hold one JSON object, and nothing after it")
	}
	job, err := ex.Start(req)
	var re *export.RequestError
	switch {
	case errors.As(err, &re):
		return errorf(http.StatusBadRequest, "%v", err)
	case errors.Is(err, export.ErrBusy):
		return errorf(http.StatusConflict, "%v", err)
	case err != nil:
		return err
	}
	w.Header().Set("Location", "/v1/exports/"+job.ID)
	writeJSON(w, http.StatusAccepted, job)
	return nil
}

// getExport is GET /v1/exports/{id}.
func (s *Server) getExport(w http.ResponseWriter, r *http.Request) error {
	if _, err := params(r); err != nil {
		return err
	}
	ex, err := s.exporter()
	if err != nil {
		return err
	}
	job, ok := ex.Job(r.PathValue("id"))
	if !ok {
		return errorf(http.StatusNotFound, "no export %q (the newest 16 are kept)", r.PathValue("id"))
	}
	writeJSON(w, http.StatusOK, job)
	return nil
}

// listExports is GET /v1/exports: the kept exports, newest first.
func (s *Server) listExports(w http.ResponseWriter, r *http.Request) error {
	if _, err := params(r); err != nil {
		return err
	}
	ex, err := s.exporter()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ExportList{Exports: ex.List()})
	return nil
}

// cancelExport is DELETE /v1/exports/{id}: the running export canceled,
// its files removed; 200 with the job once it has ended.
func (s *Server) cancelExport(w http.ResponseWriter, r *http.Request) error {
	if _, err := params(r); err != nil {
		return err
	}
	ex, err := s.exporter()
	if err != nil {
		return err
	}
	job, ok, err := ex.Cancel(r.PathValue("id"))
	switch {
	case !ok:
		return errorf(http.StatusNotFound, "no export %q (the newest 16 are kept)", r.PathValue("id"))
	case errors.Is(err, export.ErrEnded):
		return errorf(http.StatusConflict, "export %s has ended (%s): nothing to cancel", job.ID, job.State)
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, job)
	return nil
}
