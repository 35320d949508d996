package sundial

import (
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/xxljob"
)

// AppProtocol checks an app's protocol and generation and returns them as stored: protocol
// "" is sundial, whose apps have no generation; an xxl-job app needs one of 2.x, 3.3, 3.5 (a
// release number such as 2.4.2 or 3.4.2 is taken as the generation it speaks). A bad value is
// a *FieldError naming protocol or protocol_version.
func AppProtocol(protocol, version string) (string, string, error) {
	switch protocol {
	case "", store.ProtocolSundial, "native":
		if version != "" {
			return "", "", schedule.Fieldf("protocol_version", "only an xxl-job app has a protocol version, got %q", version)
		}
		return store.ProtocolSundial, "", nil
	case store.ProtocolXXLJob:
		if version == "" {
			return "", "", schedule.Fieldf("protocol_version", "an xxl-job app needs its executors' generation: 2.x, 3.3 or 3.5")
		}
		gen, err := xxljob.ParseGeneration(version)
		if err != nil {
			return "", "", &schedule.FieldError{Field: "protocol_version", Err: err}
		}
		return store.ProtocolXXLJob, string(gen), nil
	}
	return "", "", schedule.Fieldf("protocol", "want sundial or xxl-job, got %q", protocol)
}

// XXLDefaultToken is XXL-JOB's shipped access token, scanned for on the internet: Sundial
// never takes it.
const XXLDefaultToken = "default_token"

// CheckXXLToken checks an xxl-job app's access token as it is set: it must be given (there
// is no default, and none is made up: the executors already have theirs) and must not be
// XXL-JOB's public default. A bad one is a *FieldError naming xxl_access_token.
func CheckXXLToken(token string) error {
	switch {
	case token == "":
		return schedule.Fieldf("xxl_access_token", "an xxl-job app needs its access token (the executors' xxl.job.accessToken) set explicitly: there is no default")
	case token == XXLDefaultToken:
		return schedule.Fieldf("xxl_access_token", "%q is XXL-JOB's public default token, which is scanned for: set a secret token on the executors and here", XXLDefaultToken)
	case len(token) > 255:
		return schedule.Fieldf("xxl_access_token", "at most 255 characters (XXL-JOB's column), got %d", len(token))
	}
	return nil
}
