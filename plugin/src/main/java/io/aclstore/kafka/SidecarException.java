package io.aclstore.kafka;

import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.protocol.Errors;

/**
 * A sidecar call that did not produce an answer.
 *
 * <p>{@link #unavailable()} is true when the sidecar could not be asked or could not answer
 * (connection refused, timeout, HTTP 503: not ready yet, log unreachable): the authorizer then
 * fails closed. Otherwise the sidecar refused the request (4xx) and said why.
 */
final class SidecarException extends Exception {
    private static final long serialVersionUID = 1L;

    private final boolean unavailable;
    private final int status;
    private final Integer kafkaErrorCode;

    SidecarException(String message, boolean unavailable, int status, Integer kafkaErrorCode,
                     Throwable cause) {
        super(message, cause);
        this.unavailable = unavailable;
        this.status = status;
        this.kafkaErrorCode = kafkaErrorCode;
    }

    boolean unavailable() {
        return unavailable;
    }

    /** The HTTP status, or 0 when no answer came. */
    int status() {
        return status;
    }

    /**
     * The Kafka exception a broker client should see: the sidecar's own Kafka error code when it
     * gave one (CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST...), else UNKNOWN_SERVER_ERROR with
     * this message.
     */
    ApiException toApiException() {
        if (kafkaErrorCode != null) {
            Errors error = Errors.forCode(kafkaErrorCode.shortValue());
            if (error != Errors.NONE && error != Errors.UNKNOWN_SERVER_ERROR) {
                return error.exception(getMessage());
            }
        }
        return new UnknownServerException(getMessage());
    }
}
