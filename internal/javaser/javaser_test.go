package javaser

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The streams in testdata were written by the JDK's ObjectOutputStream (testdata/gen).
func load(t *testing.T, name string) any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseObject(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func TestTreeSetOfDates(t *testing.T) {
	elems, err := Collection(load(t, "treeset-date.ser"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range elems {
		d, err := Date(e)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.UTC().Format(time.RFC3339))
	}
	if want := "2027-01-01T00:00:00Z 2027-12-18T00:00:00Z"; strings.Join(got, " ") != want {
		t.Fatalf("dates %v, want %s", got, want)
	}
}

func TestArrayListWithBackReferenceAndNull(t *testing.T) {
	elems, err := Collection(load(t, "arraylist.ser"))
	if err != nil {
		t.Fatal(err)
	}
	if len(elems) != 4 || elems[0] != "a" || elems[2] != nil || elems[3] != "a" {
		t.Fatalf("elements %#v", elems)
	}
	if v, ok := Boxed(elems[1]); !ok || v != int32(42) {
		t.Fatalf("element 1 is %s (%v), want Integer 42", Describe(elems[1]), v)
	}
}

func TestMapsAndModifiedUTF8(t *testing.T) {
	entries, err := Map(load(t, "linkedhashmap.ser"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0] != (Entry{"region", "eu-west"}) ||
		entries[1] != (Entry{"nul\x00and\U0001F600", "π"}) {
		t.Fatalf("entries %#v", entries)
	}
	entries, err = Map(load(t, "hashmap-long.ser"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("entries %v, %v", entries, err)
	}
	if v, ok := Boxed(entries[0].Value); !ok || v != int64(3) {
		t.Fatalf("value %s", Describe(entries[0].Value))
	}
	entries, err = Map(load(t, "properties.ser"))
	if err != nil || len(entries) != 1 || entries[0] != (Entry{"k", "v"}) {
		t.Fatalf("properties %v, %v", entries, err)
	}
}

func TestTimeZones(t *testing.T) {
	id, err := TimeZoneID(load(t, "timezone.ser"))
	if err != nil || id != "Europe/Paris" {
		t.Fatalf("zone %q, %v", id, err)
	}
	cal := load(t, "gregoriancalendar.ser").(*Object)
	if !cal.Class.Is("java.util.Calendar") {
		t.Fatalf("class %s", cal.Class.Name)
	}
	ms, _ := cal.Field("time")
	if ms != int64(1798761600000) {
		t.Fatalf("time %v", ms)
	}
	// Calendar writes a SimpleTimeZone field and the real ZoneInfo in its annotation.
	cd, _ := cal.ClassData("java.util.Calendar")
	if len(cd.Annotation) != 1 {
		t.Fatalf("annotation %#v", cd.Annotation)
	}
	if id, err := TimeZoneID(cd.Annotation[0]); err != nil || id != "America/New_York" {
		t.Fatalf("annotated zone %q, %v", id, err)
	}
}

func TestEveryFieldTypeAndCycle(t *testing.T) {
	n := load(t, "node-cycle.ser").(*Object)
	want := map[string]any{"name": "first", "letter": uint16('é'), "ratio": 0.5, "half": float32(1.5),
		"small": int16(-7), "tiny": int8(-1), "big": int64(-1 << 63), "flag": true}
	for k, w := range want {
		if v, _ := n.Field(k); v != w {
			t.Errorf("field %s = %#v, want %#v", k, v, w)
		}
	}
	if next, _ := n.Field("next"); next != n {
		t.Errorf("next is %s, want the node itself", Describe(next))
	}
	counts, _ := n.Field("counts")
	if a, ok := counts.(*Array); !ok || len(a.Elems) != 3 || a.Elems[1] != int32(-2) {
		t.Errorf("counts %#v", counts)
	}
	if c, _ := n.Field("color"); c.(*Enum).Constant != "GREEN" {
		t.Errorf("color %#v", c)
	}
	mixed, _ := n.Field("mixed")
	m := mixed.(*Array).Elems
	if m[0] != "x" || m[1] != n || m[2].(*Array).Elems[1] != false {
		t.Errorf("mixed %#v", m)
	}
}

func TestLongString(t *testing.T) {
	s, ok := load(t, "longstring.ser").(string)
	if !ok || len(s) != 70000 || strings.Trim(s, "z") != "" {
		t.Fatalf("long string of %d bytes", len(s))
	}
}

// Every truncation of a valid stream is an error, never a panic or a partial success.
func TestTruncatedStreamsFail(t *testing.T) {
	for _, name := range []string{"treeset-date.ser", "node-cycle.ser", "gregoriancalendar.ser"} {
		b, _ := os.ReadFile(filepath.Join("testdata", name))
		for n := 0; n < len(b); n++ {
			if _, err := ParseObject(b[:n]); err == nil {
				t.Fatalf("%s cut at %d of %d bytes parsed", name, n, len(b))
			} else if n >= 4 && !errors.Is(err, ErrFormat) {
				t.Fatalf("%s cut at %d: error %v does not wrap ErrFormat", name, n, err)
			}
		}
	}
}

func TestHostileInputs(t *testing.T) {
	for name, b := range map[string][]byte{
		"not a stream":       []byte("hello"),
		"array of 2^31-1":    {0xAC, 0xED, 0, 5, tcArray, tcClassDesc, 0, 2, '[', 'I', 0, 0, 0, 0, 0, 0, 0, 0, scSerializable, 0, 0, tcEndBlockData, tcNull, 0x7F, 0xFF, 0xFF, 0xFF},
		"dangling reference": {0xAC, 0xED, 0, 5, tcReference, 0x00, 0x7E, 0x00, 0x05},
		"stray end":          {0xAC, 0xED, 0, 5, tcEndBlockData},
		"exception":          {0xAC, 0xED, 0, 5, tcException},
		"deep nesting":       append([]byte{0xAC, 0xED, 0, 5}, []byte(strings.Repeat(string([]byte{tcObject, tcClassDesc, 0, 1, 'A', 0, 0, 0, 0, 0, 0, 0, 0, scSerializable, 0, 1, 'L', 0, 1, 'f', tcString, 0, 1, 'X', tcEndBlockData, tcNull}), 1000))...),
	} {
		if _, err := Parse(b); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.ser"))
	for _, file := range files {
		b, _ := os.ReadFile(file)
		if len(b) < 4096 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cs, err := Parse(b)
		if err != nil {
			return
		}
		// Whatever parses can be walked by the readers without a panic.
		for _, c := range cs {
			_, _ = Collection(c)
			_, _ = Map(c)
			_, _ = Date(c)
			_, _ = TimeZoneID(c)
			_, _ = Boxed(c)
			_ = Describe(c)
		}
	})
}

// A million resets in a row are read in a loop, not by a million nested calls.
func TestManyResets(t *testing.T) {
	b := append([]byte{0xAC, 0xED, 0, 5}, bytes.Repeat([]byte{tcReset}, 1<<20)...)
	b = append(b, tcString, 0, 1, 'x')
	cs, err := Parse(b)
	if err != nil || len(cs) != 1 || cs[0] != "x" {
		t.Fatalf("%v, %v", cs, err)
	}
}
