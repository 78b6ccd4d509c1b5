module beamconnect

go 1.26
