package authn

import (
	"os"
	"testing"

	"github.com/droverhq/drover/hub/internal/hubtest"
)

func TestMain(m *testing.M) { os.Exit(hubtest.Main(m)) }
