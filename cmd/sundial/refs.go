package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/sundial-scheduler/sundial/api"
)

// A job or a user is given by id or by name, and a name may be all digits. A positive
// integer is tried as an id first; when no such id exists but something is named so, the
// command is refused saying what it tried and how to name the other unambiguously, rather
// than guessing: an id typed wrong must not act on whatever happens to be named so.
type refKind struct {
	kind   string
	byID   func(ctx context.Context, c *api.Client, id int64) error
	byName func(ctx context.Context, c *api.Client, name string) (int64, error)
	// nameForm is how to give the name so that it is never read as an id.
	nameForm func(name string) string
}

func (k refKind) resolve(ctx context.Context, c *api.Client, ref string) (int64, error) {
	if ref == "" {
		return 0, usageErrorf("give the %s's id or name", k.kind)
	}
	n, err := strconv.ParseInt(ref, 10, 64)
	if err != nil {
		return k.byName(ctx, c, ref)
	}
	if n <= 0 {
		return 0, usageErrorf("%s id %q: want a positive integer", k.kind, ref)
	}
	if err := k.byID(ctx, c, n); !api.IsNotFound(err) {
		return n, err
	}
	switch _, err := k.byName(ctx, c, ref); {
	case err == nil:
		return 0, fmt.Errorf("%s %s: no %s with id %d; a %s is named %q: use %s", k.kind, ref, k.kind, n, k.kind, ref, k.nameForm(ref))
	case !api.IsNotFound(err):
		return 0, err
	}
	return 0, fmt.Errorf("%s %s: no %s with id %d, and none named %q", k.kind, ref, k.kind, n, ref)
}

var jobRefs = refKind{
	kind: "job",
	byID: func(ctx context.Context, c *api.Client, id int64) error {
		_, err := c.GetJob(ctx, id)
		return err
	},
	byName: func(ctx context.Context, c *api.Client, name string) (int64, error) {
		j, err := c.FindJob(ctx, "", name)
		if err == nil {
			return j.ID, nil
		}
		// GROUP/NAME read "a/b" as job b of group a; a job of the default group may be named
		// "a/b" itself.
		if g, _, ok := strings.Cut(name, "/"); ok && g != api.DefaultGroup && api.IsNotFound(err) {
			if _, derr := c.FindJob(ctx, api.DefaultGroup, name); derr == nil {
				return 0, fmt.Errorf("job %s: no job named so in group %s; a job of group %s is named %q: use %s/%s",
					name, g, api.DefaultGroup, name, api.DefaultGroup, name)
			}
		}
		return 0, err
	},
	nameForm: func(name string) string { return api.DefaultGroup + "/" + name },
}

// userNamePrefix gives a user by name alone: name:123 is the user named "123".
const userNamePrefix = "name:"

var userRefs = refKind{
	kind: "user",
	byID: func(ctx context.Context, c *api.Client, id int64) error {
		_, err := c.GetUser(ctx, id)
		return err
	},
	byName: func(ctx context.Context, c *api.Client, name string) (int64, error) {
		u, err := c.FindUser(ctx, name)
		if err != nil {
			return 0, err
		}
		return u.ID, nil
	},
	nameForm: func(name string) string { return userNamePrefix + name },
}

// jobRef resolves a job given by id, NAME or GROUP/NAME.
func jobRef(ctx context.Context, c *api.Client, ref string) (int64, error) {
	return jobRefs.resolve(ctx, c, ref)
}

// userID resolves a user given by id or name (name:NAME for a name alone).
func userID(ctx context.Context, c *api.Client, ref string) (int64, error) {
	if name, ok := strings.CutPrefix(ref, userNamePrefix); ok {
		return userRefs.byName(ctx, c, name)
	}
	return userRefs.resolve(ctx, c, ref)
}
