module beamconnect

go 1.26

require (
	github.com/lmittmann/tint v1.2.1
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1
	github.com/spf13/pflag v1.0.10
)
