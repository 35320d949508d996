package schedule

// intervalDivergence is a case where Sundial deliberately answers differently from Quartz.
type intervalDivergence struct {
	why   string
	check func(intervalResult) error // what Sundial must answer instead
}

var intervalDivergences = map[string]intervalDivergence{}
