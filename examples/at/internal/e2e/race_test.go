//go:build race

package e2e_test

// raceEnabled says that the tests run with -race, so the operator binary is
// built with it too.
const raceEnabled = true
