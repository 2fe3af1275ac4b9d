package errors

import (
	stderrors "errors"
	"fmt"
)

// ErrUnsupported is the standard library's [stderrors.ErrUnsupported]: the
// same value, so errors.Is matches it whichever package the caller imported.
var ErrUnsupported = stderrors.ErrUnsupported

// New returns an error whose text is text, exactly as the standard
// library's errors.New does.
func New(text string) error { return stderrors.New(text) }

// Errorf formats an error as [fmt.Errorf] does, including %w wrapping of one
// or several errors.
func Errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }

// Is reports whether any error in err's tree matches target, as the standard
// library's errors.Is does.
func Is(err, target error) bool { return stderrors.Is(err, target) }

// As finds the first error in err's tree that matches target and sets target
// to it, as the standard library's errors.As does.
func As(err error, target any) bool { return stderrors.As(err, target) }

// AsType finds the first error in err's tree of type E, as the standard
// library's errors.AsType does.
func AsType[E error](err error) (E, bool) { return stderrors.AsType[E](err) }

// Join returns an error that wraps errs, discarding nil ones, as the
// standard library's errors.Join does; it returns nil when every err is nil.
func Join(errs ...error) error { return stderrors.Join(errs...) }

// Unwrap returns the result of err's Unwrap() error method, or nil, as the
// standard library's errors.Unwrap does. Like it, Unwrap does not unwrap
// joined errors.
func Unwrap(err error) error { return stderrors.Unwrap(err) }
