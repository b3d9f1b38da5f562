package conformance

import (
	"context"
	"errors"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/record"
)

// TamperFirstRecord returns a Tamper function that flips one byte of the
// first flight-recorder record in db (record.EventRange), as
// an intruder with access to the storage would.
func TamperFirstRecord(db kv.DB) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		return db.Update(ctx, func(txn kv.Txn) error {
			var key, val []byte
			err := txn.Scan(record.EventRange(), func(k, v []byte) error {
				key, val = append([]byte(nil), k...), append([]byte(nil), v...)
				return kv.ErrStop
			})
			if err != nil {
				return err
			}
			if key == nil {
				return errors.New("no record to tamper with")
			}
			val[len(val)/2] ^= 0x01
			return txn.Set(key, val)
		})
	}
}
