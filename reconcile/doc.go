// Package reconcile compares desired objects with live ones and writes only drift.
package reconcile
