// Package setting resolves a setting that a configuration accepts in two places (a shorthand
// field and the nested configuration it feeds), so that each setting has one value: the one
// given, or an error when the two places disagree.
package setting

import "fmt"

// One returns the value of a setting that may be given as a or as b: whichever is not the
// zero value, or either when they are equal. Two different values are an error naming both
// places (aName, bName), since silently preferring one hides a mistake in the other.
func One[T comparable](aName string, a T, bName string, b T) (T, error) {
	var zero T
	switch {
	case a == zero:
		return b, nil
	case b == zero, a == b:
		return a, nil
	}
	return zero, fmt.Errorf("%s (%v) and %s (%v) disagree: set one of them", aName, a, bName, b)
}
