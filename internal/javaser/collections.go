package javaser

import (
	"encoding/binary"
	"fmt"
	"time"
)

// The readers below know how a few JDK classes write themselves (their writeObject methods,
// which have not changed since Java 1.2 apart from additions the readers skip): what Quartz
// 2.3.2 puts in its calendars and job data maps.

// annotationOf returns what the class className wrote after its fields for v, which must be an
// object of that class or a subclass.
func annotationOf(v any, className string) ([]any, error) {
	o, ok := v.(*Object)
	if !ok {
		return nil, fmt.Errorf("javaser: want a %s, have %s", className, Describe(v))
	}
	cd, ok := o.ClassData(className)
	if !ok {
		return nil, fmt.Errorf("javaser: want a %s, have a %s", className, o.Class.Name)
	}
	return cd.Annotation, nil
}

// Date returns the instant of a java.util.Date (or java.sql.Timestamp's Date part: its
// milliseconds), which writes its epoch milliseconds as a long.
func Date(v any) (time.Time, error) {
	ann, err := annotationOf(v, "java.util.Date")
	if err != nil {
		return time.Time{}, err
	}
	if len(ann) < 1 {
		return time.Time{}, fmt.Errorf("javaser: java.util.Date without its time")
	}
	bd, ok := ann[0].(BlockData)
	if !ok || len(bd) < 8 {
		return time.Time{}, fmt.Errorf("javaser: java.util.Date without its time")
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(bd))), nil
}

// Collection returns the elements of a java.util.TreeSet, ArrayList, HashSet or
// LinkedList in their stored order.
func Collection(v any) ([]any, error) {
	o, ok := v.(*Object)
	if !ok {
		return nil, fmt.Errorf("javaser: want a collection, have %s", Describe(v))
	}
	var ann []any
	var skip int // annotation items before the count: TreeSet writes its comparator first
	var countAt int
	switch {
	case o.Class.Is("java.util.TreeSet"):
		ann, _ = annotationOf(v, "java.util.TreeSet")
		skip, countAt = 1, 0
	case o.Class.Is("java.util.ArrayList"):
		ann, _ = annotationOf(v, "java.util.ArrayList")
	case o.Class.Is("java.util.HashSet"):
		// capacity int, load factor float, size int
		ann, _ = annotationOf(v, "java.util.HashSet")
		countAt = 8
	case o.Class.Is("java.util.LinkedList"):
		ann, _ = annotationOf(v, "java.util.LinkedList")
	default:
		return nil, fmt.Errorf("javaser: %s is not a collection this package reads", o.Class.Name)
	}
	if o.Class.Is("java.util.TreeSet") {
		if len(ann) < 1 {
			return nil, fmt.Errorf("javaser: %s without its comparator", o.Class.Name)
		}
		if ann[0] != nil {
			return nil, fmt.Errorf("javaser: %s with a comparator (%s)", o.Class.Name, Describe(ann[0]))
		}
	}
	return countedElems(o.Class.Name, ann[min(skip, len(ann)):], countAt, 1)
}

// countedElems reads a block that holds an element count at byte countAt, followed by
// count·per objects.
func countedElems(class string, ann []any, countAt, per int) ([]any, error) {
	if len(ann) < 1 {
		return nil, fmt.Errorf("javaser: %s without its size", class)
	}
	bd, ok := ann[0].(BlockData)
	if !ok || len(bd) < countAt+4 {
		return nil, fmt.Errorf("javaser: %s without its size", class)
	}
	n := int(int32(binary.BigEndian.Uint32(bd[countAt:])))
	elems := ann[1:]
	if n < 0 || n*per != len(elems) {
		return nil, fmt.Errorf("javaser: %s of size %d holds %d objects", class, n, len(elems))
	}
	for _, e := range elems {
		if _, ok := e.(BlockData); ok {
			return nil, fmt.Errorf("javaser: %s holds primitive data among its elements", class)
		}
	}
	return elems, nil
}

// Entry is one key and value of a map.
type Entry struct {
	Key, Value any
}

// Map returns the entries of a java.util.HashMap, LinkedHashMap, TreeMap, Hashtable or
// Properties (and their subclasses) in stored order. A TreeMap with a comparator is refused.
func Map(v any) ([]Entry, error) {
	o, ok := v.(*Object)
	if !ok {
		return nil, fmt.Errorf("javaser: want a map, have %s", Describe(v))
	}
	var ann []any
	countAt := 0
	switch {
	case o.Class.Is("java.util.HashMap"):
		ann, _ = annotationOf(v, "java.util.HashMap")
		countAt = 4 // buckets, then size
	case o.Class.Is("java.util.Hashtable"):
		ann, _ = annotationOf(v, "java.util.Hashtable")
		countAt = 4 // capacity, then count
	case o.Class.Is("java.util.TreeMap"):
		if c, _ := o.Field("comparator"); c != nil {
			return nil, fmt.Errorf("javaser: %s with a comparator (%s)", o.Class.Name, Describe(c))
		}
		ann, _ = annotationOf(v, "java.util.TreeMap")
	default:
		return nil, fmt.Errorf("javaser: %s is not a map this package reads", o.Class.Name)
	}
	elems, err := countedElems(o.Class.Name, ann, countAt, 2)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(elems)/2)
	for i := 0; i+1 < len(elems); i += 2 {
		out = append(out, Entry{elems[i], elems[i+1]})
	}
	return out, nil
}

// TimeZoneID returns the ID of a java.util.TimeZone (ZoneInfo, SimpleTimeZone, ...).
func TimeZoneID(v any) (string, error) {
	o, ok := v.(*Object)
	if !ok || !o.Class.Is("java.util.TimeZone") {
		return "", fmt.Errorf("javaser: want a java.util.TimeZone, have %s", Describe(v))
	}
	cd, _ := o.ClassData("java.util.TimeZone")
	id, ok := cd.Values["ID"].(string)
	if !ok {
		return "", fmt.Errorf("javaser: %s without an ID", o.Class.Name)
	}
	return id, nil
}

// Describe names what v is, for messages: "null", "a java.lang.Integer", "a string".
func Describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case *Object:
		return "a " + v.Class.Name
	case *Array:
		return "an array " + v.Class.Name
	case *Enum:
		return "an enum " + v.Class.Name
	case string:
		return "a string"
	case BlockData:
		return "primitive data"
	case *Class:
		return "a class"
	case *ClassDesc:
		return "a class description"
	}
	return fmt.Sprintf("a %T", v)
}

// Boxed returns the value of a boxed primitive (java.lang.Integer, Long, Boolean, ...) as
// the Go type ClassData.Values uses for it.
func Boxed(v any) (any, bool) {
	o, ok := v.(*Object)
	if !ok {
		return nil, false
	}
	switch o.Class.Name {
	case "java.lang.Integer", "java.lang.Long", "java.lang.Short", "java.lang.Byte",
		"java.lang.Double", "java.lang.Float", "java.lang.Boolean", "java.lang.Character":
		return o.Field("value")
	}
	return nil, false
}
