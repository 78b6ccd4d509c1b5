module beamconnect

go 1.26

require (
	github.com/ebitengine/purego v0.11.3
	github.com/fsnotify/fsnotify v1.10.1
	github.com/lmittmann/tint v1.2.1
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1
	github.com/spf13/pflag v1.0.10
)

require golang.org/x/sys v0.13.0
