package engine

import (
	"errors"
	"fmt"

	"github.com/graphtide/graphtide/internal/core"
)

// fromCore converts a core error to the engine's error types.
func fromCore(e *core.Error) error {
	switch e.Code {
	case core.CodeInvalid:
		return fmt.Errorf("%w: %s", ErrInvalid, e.Msg)
	case core.CodeCorruption:
		return &CorruptionError{File: e.File, Offset: e.Offset, Reason: e.Msg}
	case core.CodeClosed:
		return fmt.Errorf("%w: %s", ErrClosed, e.Msg)
	case core.CodeIO:
		return &IOError{File: e.File, Reason: e.Msg}
	case core.CodeLocked:
		return fmt.Errorf("%w: %s (%s)", ErrLocked, e.Msg, e.File)
	case core.CodeBuffer:
		return errBuffer
	default:
		return errors.New("engine: internal error: " + e.Msg)
	}
}
