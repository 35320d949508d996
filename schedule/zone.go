package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	// The embedded IANA database lets a bare machine (a scratch container, Windows) resolve
	// every zone a trigger may name.
	_ "time/tzdata"
)

// LoadZone resolves a trigger's time zone: an IANA name ("Europe/Berlin"), "UTC", or a fixed
// offset "+05:30" / "-08:00" (the forms java.time.ZoneId.of accepts that Quartz users write).
func LoadZone(name string) (*time.Location, error) {
	if name == "" {
		return nil, fmt.Errorf("time zone: empty name")
	}
	if name[0] == '+' || name[0] == '-' {
		return parseOffsetZone(name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil || name == "Local" {
		return nil, fmt.Errorf("time zone %q: unknown zone", name)
	}
	return loc, nil
}

func parseOffsetZone(name string) (*time.Location, error) {
	sign := 1
	if name[0] == '-' {
		sign = -1
	}
	hh, mm, found := strings.Cut(name[1:], ":")
	h, errH := strconv.Atoi(hh)
	m := 0
	var errM error
	if found {
		m, errM = strconv.Atoi(mm)
	}
	if errH != nil || errM != nil || len(hh) != 2 || (found && len(mm) != 2) || h > 18 || m > 59 || (h == 18 && m != 0) {
		return nil, fmt.Errorf("time zone %q: want an IANA name or an offset like +05:30", name)
	}
	return time.FixedZone(name, sign*(h*3600+m*60)), nil
}
