package store

import "time"

// AddressMode says where an app's executor addresses come from.
type AddressMode string

// The address modes.
const (
	// AddressAuto uses the instances that register and heartbeat (the registry).
	AddressAuto AddressMode = "auto"
	// AddressManual uses the addresses stored with the app.
	AddressManual AddressMode = "manual"
)

// App is an executor group: the executors that run an app's remote jobs.
type App struct {
	Name  string
	Title string
	// AddressMode defaults to AddressAuto on AppPut.
	AddressMode AddressMode
	// Addresses are the executors of an AddressManual app.
	Addresses []string
	// Protocol is the wire protocol its executors speak: ProtocolSundial (the default) or
	// ProtocolXXLJob.
	Protocol string
	// ProtocolVersion is the XXL-JOB generation (2.x, 3.3, 3.5) of an xxl-job app.
	ProtocolVersion string
	// XXLTokenHash is the SHA-256 (hex) of an xxl-job app's access token: what its executors
	// present is checked against it.
	XXLTokenHash string
	// XXLTokenSealed is the same token sealed with the server's secret key: the server
	// presents it to the executors, which check it too.
	XXLTokenSealed string
	CreatedAt      int64
	UpdatedAt      int64
}

// The app protocols.
const (
	ProtocolSundial = "sundial"
	ProtocolXXLJob  = "xxl-job"
)

// InstanceKey names one executor instance at its address (RegistryTouch).
type InstanceKey struct {
	App, Address, Instance string
}

// Instance is one registered executor of an app, alive while it heartbeats.
type Instance struct {
	App     string
	Address string
	// Instance is the id the executor process picked at start: a new one at the same address
	// is a restarted executor.
	Instance string
	Handlers []string
	// Version is what the executor reports it runs ("" when it reports nothing).
	Version string
	// LiveFor is how long the instance may stay silent before it is gone, when longer than
	// the server's threshold (XXL-JOB executors beat every 30 s); 0 for the server's.
	LiveFor time.Duration
	// RegisteredAt is when this instance took the address (a new instance there starts it
	// again); it and LastSeen come from the database clock.
	RegisteredAt int64
	LastSeen     int64
}

// ExecutorKey names one executor: its app and address.
type ExecutorKey struct {
	App     string
	Address string
}

// ExecutorRun is a running execution handed to an executor.
type ExecutorRun struct {
	ID int64
	// Instance is the executor process it was sent to ("" when unknown).
	Instance string
	FiredAt  int64
	// DispatchedAt is when the dispatch was recorded (ExecutionsRecordDispatches), by the
	// database's clock; 0 before.
	DispatchedAt int64
	// Accepted is set once the executor said it has the run (DispatchAccepted).
	Accepted bool
}

// Dispatched is where a running execution was handed: the executor (app, address, instance)
// that alone may report about it.
type Dispatched struct {
	ID      int64
	App     string
	Address string
	// Instance is the executor process it was sent to ("" when unknown: an executor that
	// sends no instance id).
	Instance string
	FiredAt  int64
}

// AppCredential is an app's executor credential: the SHA-256 (hex) of the secret executors
// of that app present. The secret itself is never stored.
type AppCredential struct {
	App       string
	Hash      string
	CreatedAt int64
	RotatedAt int64 // 0 until rotated
}

// ClusterKey is one generation of the cluster's key pair that signs server → executor calls
// (package internal/execsign; the keys in its text form).
type ClusterKey struct {
	Generation int64
	PublicKey  string
	PrivateKey string
	CreatedAt  int64
}

// DispatchRecord is one run's dispatch write of a batch (Store.ExecutionsRecordDispatches).
type DispatchRecord struct {
	Owner Owner
	ID    int64
	// Accepted records that the executor accepted the run; the other fields are then unused.
	// Otherwise the record says where the run is being sent.
	Accepted               bool
	Address, Instance      string
	ShardIndex, ShardTotal int
	Message                string
}
