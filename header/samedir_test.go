package header

import (
	"reflect"
	"testing"
)

// TestSameDirectory changes each field of a Meta in turn, by reflection
// (so a field added later is covered too): only a changed Generation
// leaves the copies the same directory.
func TestSameDirectory(t *testing.T) {
	base := validMeta()
	if !base.SameDirectory(base) {
		t.Fatal("a Meta is not the same directory as itself")
	}
	n := reflect.TypeOf(*base).NumField()
	for i := range n {
		c := *base
		c.Filters = append([]FilterDesc(nil), base.Filters...)
		name := reflect.TypeOf(c).Field(i).Name
		if !bump(reflect.ValueOf(&c).Elem().Field(i)) {
			t.Fatalf("field %s: no way to change it in this test", name)
		}
		if got, want := base.SameDirectory(&c), name == "Generation"; got != want {
			t.Errorf("%s changed: SameDirectory %v, want %v", name, got, want)
		}
	}
}

// bump changes v (a number, or a struct or slice holding one) and reports
// whether it could.
func bump(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() && bump(v.Field(i)) {
				return true
			}
		}
		return false
	case reflect.Slice:
		if v.Len() == 0 {
			return false
		}
		return bump(v.Index(v.Len() - 1))
	case reflect.Float64:
		v.SetFloat(v.Float() + 1)
	default:
		return false
	}
	return true
}
