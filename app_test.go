package sundial

import (
	"errors"
	"testing"
)

func TestAppProtocol(t *testing.T) {
	for _, c := range []struct {
		protocol, version string
		wantP, wantV      string
		field             string
	}{
		{"", "", "sundial", "", ""},
		{"native", "", "sundial", "", ""},
		{"xxl-job", "3.3", "xxl-job", "3.3", ""},
		{"xxl-job", "2.4.2", "xxl-job", "2.x", ""},
		{"xxl-job", "3.4.2", "xxl-job", "3.3", ""},
		{"xxl-job", "3.5.0", "xxl-job", "3.5", ""},
		{"xxl-job", "", "", "", "protocol_version"},
		{"xxl-job", "9", "", "", "protocol_version"},
		{"sundial", "3.3", "", "", "protocol_version"},
		{"quartz", "", "", "", "protocol"},
	} {
		p, v, err := AppProtocol(c.protocol, c.version)
		var fe *FieldError
		switch {
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field):
			t.Errorf("AppProtocol(%q, %q) = %v, want a FieldError on %s", c.protocol, c.version, err, c.field)
		case c.field == "" && (err != nil || p != c.wantP || v != c.wantV):
			t.Errorf("AppProtocol(%q, %q) = %q, %q, %v; want %q, %q", c.protocol, c.version, p, v, err, c.wantP, c.wantV)
		}
	}
	for _, tok := range []string{"", XXLDefaultToken} {
		var fe *FieldError
		if err := CheckXXLToken(tok); !errors.As(err, &fe) || fe.Field != "xxl_access_token" {
			t.Errorf("CheckXXLToken(%q) = %v, want a FieldError on xxl_access_token", tok, err)
		}
	}
	if err := CheckXXLToken("s3cret-of-the-executors"); err != nil {
		t.Errorf("CheckXXLToken of a real token: %v", err)
	}
}
