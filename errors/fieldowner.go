package errors

// ErrNoFieldOwner is the one error, for the whole library, of a write that
// has no field manager to send: a writer built with an empty field owner
// returns it (wrapped, and [Permanent]: no retry gives the write a name)
// and sends nothing. Match it with errors.Is(err, errors.ErrNoFieldOwner).
//
// The field manager is the operator's own name: the API server records
// under it, in metadata.managedFields, which fields the write set. Every
// writer of the library takes it as an argument where it is built.
var ErrNoFieldOwner = New("no field owner: every write of the library carries the operator's field manager")
