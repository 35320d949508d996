// Package javaser reads the Java Object Serialization Stream Protocol (the grammar of
// java.io.ObjectStreamConstants, stream version 5): enough to take apart objects that a Java
// program wrote with ObjectOutputStream, such as the calendars and job data maps a Quartz job
// store keeps as blobs, without a JVM.
//
// It decodes the stream's structure only: objects come back as their class descriptions and
// field values, with what a class's writeObject method wrote after its fields kept as the
// class's annotation (block data and objects, in order). Helpers in collections.go read the
// annotations of the few JDK classes Quartz uses (Date, TreeSet, ArrayList, HashMap,
// TimeZone). Nothing is instantiated and no class is loaded, so a hostile stream can at most
// be rejected: every length is checked against the bytes that are left, and nesting is
// bounded.
package javaser

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf16"
)

// The stream's constants (java.io.ObjectStreamConstants).
const (
	streamMagic   = 0xACED
	streamVersion = 5

	tcNull           = 0x70
	tcReference      = 0x71
	tcClassDesc      = 0x72
	tcObject         = 0x73
	tcString         = 0x74
	tcArray          = 0x75
	tcClass          = 0x76
	tcBlockData      = 0x77
	tcEndBlockData   = 0x78
	tcReset          = 0x79
	tcBlockDataLong  = 0x7A
	tcException      = 0x7B
	tcLongString     = 0x7C
	tcProxyClassDesc = 0x7D
	tcEnum           = 0x7E

	baseWireHandle = 0x7E0000

	scWriteMethod    = 0x01
	scSerializable   = 0x02
	scExternalizable = 0x04
	scBlockData      = 0x08
	scEnum           = 0x10
)

// maxDepth bounds the nesting of objects, so that a stream of nested objects cannot exhaust
// the stack. Quartz's deepest blob (a calendar chain holding a GregorianCalendar holding a
// ZoneInfo) nests about 20 levels per calendar.
const maxDepth = 512

// ClassDesc is a class description: the class's name, serialVersionUID, flags and
// serializable fields, and its superclass's description (nil at the top).
type ClassDesc struct {
	Name   string
	UID    int64
	Flags  byte
	Fields []FieldDesc
	Super  *ClassDesc
	// Annotation is what the writer's annotateClass wrote (usually nothing).
	Annotation []any
	// Interfaces lists a dynamic proxy class's interfaces; Name is empty for a proxy.
	Interfaces []string
}

// FieldDesc describes one serializable field: Type is the JVM type code (B C D F I J S Z for
// primitives, L for an object, [ for an array) and ClassName the field's type signature for
// object and array fields ("Ljava/util/TimeZone;", "[Z").
type FieldDesc struct {
	Type      byte
	Name      string
	ClassName string
}

// Is reports whether the class or one of its superclasses is named name.
func (c *ClassDesc) Is(name string) bool {
	for d := c; d != nil; d = d.Super {
		if d.Name == name {
			return true
		}
	}
	return false
}

// hierarchy returns the class descriptions from the top-most serializable superclass down
// to c, the order in which the stream holds an object's class data.
func (c *ClassDesc) hierarchy() []*ClassDesc {
	var out []*ClassDesc
	for d := c; d != nil; d = d.Super {
		out = append(out, d)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// Object is a serialized object: its class and, for each class of its hierarchy from the
// top-most superclass down, the data that class wrote.
type Object struct {
	Class *ClassDesc
	Data  []ClassData
}

// ClassData is what one class of an object's hierarchy wrote: its fields' values (by name,
// as in the class description) and, for a class with a writeObject method or an
// externalizable class, what that method wrote after them.
type ClassData struct {
	Class *ClassDesc
	// Values maps field names to values: int8 (B), uint16 (C), float64 (D), float32 (F),
	// int32 (I), int64 (J), int16 (S), bool (Z), or for object fields any value Parse returns.
	Values map[string]any
	// Annotation holds, in stream order, BlockData and the objects written.
	Annotation []any
}

// Field returns the value of the field name, looked up from the object's own class up to
// its top-most superclass (the first class declaring it wins, as a subclass's field shadows
// its superclass's).
func (o *Object) Field(name string) (any, bool) {
	for i := len(o.Data) - 1; i >= 0; i-- {
		if v, ok := o.Data[i].Values[name]; ok {
			return v, true
		}
	}
	return nil, false
}

// ClassData returns the data the class className wrote for this object.
func (o *Object) ClassData(className string) (ClassData, bool) {
	for _, d := range o.Data {
		if d.Class.Name == className {
			return d, true
		}
	}
	return ClassData{}, false
}

// Array is a serialized array. Elements of primitive arrays are Go values of the types
// listed at ClassData.Values; object arrays hold what Parse returns.
type Array struct {
	Class *ClassDesc
	Elems []any
}

// Enum is a serialized enum constant.
type Enum struct {
	Class    *ClassDesc
	Constant string
}

// Class is a serialized java.lang.Class object.
type Class struct {
	Desc *ClassDesc
}

// BlockData is a run of primitive data a writeObject method wrote (adjacent blocks are
// joined).
type BlockData []byte

// ErrFormat is wrapped by every error about a malformed stream.
var ErrFormat = errors.New("javaser: malformed stream")

// Parse decodes a whole stream and returns its top-level contents in order: the objects,
// strings, arrays, ... that were written with writeObject, and BlockData for primitive
// values written directly to the stream.
func Parse(b []byte) ([]any, error) {
	r := &reader{b: b}
	if r.u16() != streamMagic || r.u16() != streamVersion {
		if r.err != nil {
			return nil, r.err
		}
		return nil, fmt.Errorf("%w: not a serialization stream (bad magic or version)", ErrFormat)
	}
	var out []any
	for r.err == nil && r.off < len(r.b) {
		v, end := r.content(0)
		if r.err != nil {
			break
		}
		if end {
			r.fail("TC_ENDBLOCKDATA outside an annotation")
			break
		}
		out = appendContent(out, v)
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// ParseObject decodes a stream holding exactly one object, as ObjectOutputStream writes it
// for one writeObject call.
func ParseObject(b []byte) (any, error) {
	cs, err := Parse(b)
	if err != nil {
		return nil, err
	}
	if len(cs) != 1 {
		return nil, fmt.Errorf("%w: want one object, the stream holds %d items", ErrFormat, len(cs))
	}
	return cs[0], nil
}

// appendContent appends v, joining adjacent block data.
func appendContent(out []any, v any) []any {
	if bd, ok := v.(BlockData); ok && len(out) > 0 {
		if prev, ok := out[len(out)-1].(BlockData); ok {
			out[len(out)-1] = append(prev[:len(prev):len(prev)], bd...)
			return out
		}
	}
	return append(out, v)
}

// reader is one pass over a stream. The first error stops it: every read after that returns
// zero values, so the grammar code checks r.err only where it loops or branches.
type reader struct {
	b       []byte
	off     int
	err     error
	handles []any
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w at byte %d: %s", ErrFormat, r.off, fmt.Sprintf(format, args...))
	}
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail("%d bytes wanted, %d left", n, len(r.b)-r.off)
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *reader) u8() byte {
	p := r.take(1)
	if p == nil {
		return 0
	}
	return p[0]
}

func (r *reader) u16() uint16 {
	p := r.take(2)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint16(p)
}

func (r *reader) i32() int32 {
	p := r.take(4)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

func (r *reader) i64() int64 {
	p := r.take(8)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

func (r *reader) peek() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.fail("unexpected end of stream")
		return 0
	}
	return r.b[r.off]
}

// utf reads a string in Java's modified UTF-8, with a 2-byte (or, long, 8-byte) length.
func (r *reader) utf(long bool) string {
	var n int64
	if long {
		n = r.i64()
	} else {
		n = int64(r.u16())
	}
	if n < 0 || n > int64(len(r.b)-r.off) {
		r.fail("string of %d bytes, %d left", n, len(r.b)-r.off)
		return ""
	}
	s, err := decodeModifiedUTF8(r.take(int(n)))
	if err != nil {
		r.fail("%v", err)
	}
	return s
}

// decodeModifiedUTF8 decodes Java's modified UTF-8: NUL is two bytes, and characters outside
// the BMP are surrogate pairs of three bytes each.
func decodeModifiedUTF8(p []byte) (string, error) {
	u := make([]uint16, 0, len(p))
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c < 0x80 && c != 0:
			u = append(u, uint16(c))
			i++
		case c&0xE0 == 0xC0:
			if i+1 >= len(p) || p[i+1]&0xC0 != 0x80 {
				return "", fmt.Errorf("bad modified UTF-8 at string byte %d", i)
			}
			u = append(u, uint16(c&0x1F)<<6|uint16(p[i+1]&0x3F))
			i += 2
		case c&0xF0 == 0xE0:
			if i+2 >= len(p) || p[i+1]&0xC0 != 0x80 || p[i+2]&0xC0 != 0x80 {
				return "", fmt.Errorf("bad modified UTF-8 at string byte %d", i)
			}
			u = append(u, uint16(c&0x0F)<<12|uint16(p[i+1]&0x3F)<<6|uint16(p[i+2]&0x3F))
			i += 3
		default:
			return "", fmt.Errorf("bad modified UTF-8 byte %#x at string byte %d", c, i)
		}
	}
	return string(utf16.Decode(u)), nil
}

func (r *reader) newHandle(v any) int {
	r.handles = append(r.handles, v)
	return len(r.handles) - 1
}

func (r *reader) reference() any {
	h := r.i32()
	i := int64(h) - baseWireHandle
	if r.err != nil {
		return nil
	}
	if i < 0 || i >= int64(len(r.handles)) {
		r.fail("reference to unknown handle %#x", h)
		return nil
	}
	return r.handles[i]
}

// content reads one item of the stream: an object, a block of data, or TC_ENDBLOCKDATA
// (end true) where an annotation ends.
func (r *reader) content(depth int) (v any, end bool) {
	for r.err == nil && r.peek() == tcReset {
		r.off++
		r.handles = r.handles[:0]
	}
	switch tc := r.peek(); tc {
	case tcBlockData:
		r.off++
		return BlockData(r.take(int(r.u8()))), false
	case tcBlockDataLong:
		r.off++
		n := r.i32()
		if n < 0 {
			r.fail("block data of negative length %d", n)
			return nil, false
		}
		return BlockData(r.take(int(n))), false
	case tcEndBlockData:
		r.off++
		return nil, true
	}
	return r.object(depth), false
}

// object reads an object-valued item: what writeObject wrote, a reference to it, or null.
func (r *reader) object(depth int) any {
	if depth > maxDepth {
		r.fail("objects nested deeper than %d", maxDepth)
		return nil
	}
	tc := r.u8()
	if r.err != nil {
		return nil
	}
	switch tc {
	case tcNull:
		return nil
	case tcReference:
		return r.reference()
	case tcString:
		s := r.utf(false)
		r.newHandle(s)
		return s
	case tcLongString:
		s := r.utf(true)
		r.newHandle(s)
		return s
	case tcClassDesc, tcProxyClassDesc:
		r.off--
		return r.classDesc(depth + 1)
	case tcClass:
		c := &Class{}
		c.Desc = r.classDesc(depth + 1)
		r.newHandle(c)
		return c
	case tcArray:
		return r.array(depth + 1)
	case tcEnum:
		e := &Enum{Class: r.classDesc(depth + 1)}
		r.newHandle(e)
		if s, ok := r.object(depth + 1).(string); ok {
			e.Constant = s
		} else {
			r.fail("enum constant name is not a string")
		}
		return e
	case tcObject:
		return r.newObject(depth + 1)
	case tcException:
		r.fail("the writer failed mid-stream (TC_EXCEPTION)")
		return nil
	case tcReset:
		r.handles = r.handles[:0]
		return r.object(depth + 1)
	}
	r.off--
	r.fail("unexpected type code %#x", tc)
	return nil
}

// classDesc reads a class description (new, proxy, null or a reference to one).
func (r *reader) classDesc(depth int) *ClassDesc {
	if depth > maxDepth {
		r.fail("class descriptions nested deeper than %d", maxDepth)
		return nil
	}
	tc := r.u8()
	if r.err != nil {
		return nil
	}
	switch tc {
	case tcNull:
		return nil
	case tcReference:
		v := r.reference()
		d, ok := v.(*ClassDesc)
		if !ok && r.err == nil {
			r.fail("reference to a %T where a class description belongs", v)
		}
		return d
	case tcClassDesc:
		d := &ClassDesc{Name: r.utf(false), UID: r.i64()}
		r.newHandle(d)
		d.Flags = r.u8()
		n := int(r.u16())
		if r.err == nil && n > len(r.b)-r.off {
			r.fail("%d fields, %d bytes left", n, len(r.b)-r.off)
		}
		for i := 0; i < n && r.err == nil; i++ {
			f := FieldDesc{Type: r.u8(), Name: r.utf(false)}
			switch f.Type {
			case 'B', 'C', 'D', 'F', 'I', 'J', 'S', 'Z':
			case 'L', '[':
				s, ok := r.object(depth + 1).(string)
				if !ok && r.err == nil {
					r.fail("field %s: type name is not a string", f.Name)
				}
				f.ClassName = s
			default:
				r.fail("field %s: unknown type code %q", f.Name, f.Type)
			}
			d.Fields = append(d.Fields, f)
		}
		d.Annotation = r.annotation(depth + 1)
		d.Super = r.classDesc(depth + 1)
		r.checkSuper(d)
		return d
	case tcProxyClassDesc:
		d := &ClassDesc{}
		r.newHandle(d)
		n := r.i32()
		if r.err == nil && (n < 0 || int64(n) > int64(len(r.b)-r.off)) {
			r.fail("proxy with %d interfaces, %d bytes left", n, len(r.b)-r.off)
		}
		for i := int32(0); i < n && r.err == nil; i++ {
			d.Interfaces = append(d.Interfaces, r.utf(false))
		}
		d.Annotation = r.annotation(depth + 1)
		d.Super = r.classDesc(depth + 1)
		r.checkSuper(d)
		return d
	}
	r.off--
	r.fail("unexpected type code %#x where a class description belongs", tc)
	return nil
}

// maxHierarchy bounds a class's chain of superclasses.
const maxHierarchy = 256

// checkSuper refuses a superclass chain that loops back (a back reference can name a class
// being described as its own superclass) or is absurdly long, which would make every walk up
// the chain endless.
func (r *reader) checkSuper(d *ClassDesc) {
	n := 0
	for s := d.Super; s != nil; s = s.Super {
		if s == d || n > maxHierarchy {
			r.fail("class %s: its superclasses loop or nest deeper than %d", d.Name, maxHierarchy)
			d.Super = nil
			return
		}
		n++
	}
}

// annotation reads contents up to TC_ENDBLOCKDATA.
func (r *reader) annotation(depth int) []any {
	var out []any
	for r.err == nil {
		v, end := r.content(depth)
		if end || r.err != nil {
			break
		}
		out = appendContent(out, v)
	}
	return out
}

func (r *reader) array(depth int) any {
	a := &Array{Class: r.classDesc(depth)}
	r.newHandle(a)
	n := r.i32()
	if r.err != nil {
		return nil
	}
	if a.Class == nil || len(a.Class.Name) < 2 || a.Class.Name[0] != '[' {
		r.fail("array whose class is not an array class")
		return nil
	}
	// Every element takes at least one byte, so a count beyond the bytes left is a lie; this
	// bounds the allocation below.
	if n < 0 || int64(n) > int64(len(r.b)-r.off) {
		r.fail("array of %d elements, %d bytes left", n, len(r.b)-r.off)
		return nil
	}
	a.Elems = make([]any, 0, n)
	elem := a.Class.Name[1]
	for i := int32(0); i < n && r.err == nil; i++ {
		a.Elems = append(a.Elems, r.value(elem, depth))
	}
	return a
}

// value reads one field or array element of JVM type code t.
func (r *reader) value(t byte, depth int) any {
	switch t {
	case 'B':
		return int8(r.u8())
	case 'C':
		return r.u16()
	case 'D':
		return math.Float64frombits(uint64(r.i64()))
	case 'F':
		return math.Float32frombits(uint32(r.i32()))
	case 'I':
		return r.i32()
	case 'J':
		return r.i64()
	case 'S':
		return int16(r.u16())
	case 'Z':
		return r.u8() != 0
	case 'L', '[':
		return r.object(depth + 1)
	}
	r.fail("unknown type code %q", t)
	return nil
}

func (r *reader) newObject(depth int) any {
	o := &Object{Class: r.classDesc(depth)}
	r.newHandle(o)
	if r.err != nil {
		return nil
	}
	if o.Class == nil {
		r.fail("object without a class")
		return nil
	}
	for _, d := range o.Class.hierarchy() {
		if r.err != nil {
			break
		}
		cd := ClassData{Class: d}
		switch {
		case d.Flags&scExternalizable != 0:
			if d.Flags&scBlockData == 0 {
				// Protocol version 1: the class's own bytes, with no framing to skip them by.
				r.fail("class %s is externalizable in protocol version 1, which cannot be read without the class", d.Name)
				return nil
			}
			cd.Annotation = r.annotation(depth)
		case d.Flags&scSerializable != 0:
			cd.Values = make(map[string]any, len(d.Fields))
			for _, f := range d.Fields {
				cd.Values[f.Name] = r.value(f.Type, depth)
			}
			if d.Flags&scWriteMethod != 0 {
				cd.Annotation = r.annotation(depth)
			}
		}
		o.Data = append(o.Data, cd)
	}
	return o
}
