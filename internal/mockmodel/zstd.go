package mockmodel

import "fmt"

func decodeZstd(raw []byte) ([]byte, error) {
	return nil, fmt.Errorf("zstd request bodies are not supported yet (%d bytes)", len(raw))
}
